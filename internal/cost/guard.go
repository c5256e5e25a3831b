package cost

// The cost guard's pure arithmetic: a call's worst case against the run's cap and the credits
// available. The agent loop parks, journals and reserves around it.

// WorstCall is the most a call to model may be billed: inputBound tokens at the dearest input
// rate plus maxOutput tokens of output, with the markup. priced is false when the model is not
// in the table, so nothing bounds the call.
func (t *Table) WorstCall(model string, inputBound, maxOutput int64) (worst Micros, priced bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.WorstCaseBill(inputBound, maxOutput), true
}

// OverCap reports whether a call whose worst case is worst, on a run that has spent spent, may
// pass limit, and the least cap that lets it run.
func OverCap(spent, worst, limit Micros) (needed Micros, over bool) {
	needed = spent + worst
	return needed, needed > limit
}

// CreditsShort is the least that must be added to available credits for a call whose worst case
// is worst.
func CreditsShort(worst Micros, available int64) Micros { return worst - Micros(available) }
