package api

import "time"

// The money and secrets API's shapes (internal/server serves them; the client names them).

// Credits is GET /v2/credits: the server's credits balance and its recent ledger.
type Credits struct {
	// Enforced: credits were added at least once; until then server-access calls are metered on
	// their runs but not limited or charged here.
	Enforced bool `json:"enforced"`
	// BalanceUSD is added minus charged ("at most X" when some charge could not be priced);
	// AvailableUSD is the balance minus what calls in flight hold.
	BalanceUSD      string              `json:"balanceUSD"`
	AddedUSD        string              `json:"addedUSD"`
	ChargedUSD      string              `json:"chargedUSD"`
	ReservedUSD     string              `json:"reservedUSD"`
	AvailableUSD    string              `json:"availableUSD"`
	UnpricedCharges int64               `json:"unpricedCharges"`
	Entries         []CreditEntry       `json:"entries"`
	Reservations    []CreditReservation `json:"reservations"`
}

// CreditEntry is one line of the credits ledger.
type CreditEntry struct {
	Seq  int64  `json:"seq"`
	Time string `json:"time"`
	// Kind is "add" or "charge".
	Kind      string `json:"kind"`
	AmountUSD string `json:"amountUSD"`
	Run       string `json:"run,omitempty"`
	StepKey   string `json:"stepKey,omitempty"`
	Note      string `json:"note,omitempty"`
}

// CreditReservation is credits held by a call in flight.
type CreditReservation struct {
	Run       string `json:"run"`
	StepKey   string `json:"stepKey"`
	Attempt   int    `json:"attempt"`
	AmountUSD string `json:"amountUSD"`
}

// SecretInfo is a stored secret as GET /v2/secrets lists it: its name and key names, never its
// values.
type SecretInfo struct {
	Name      string    `json:"name"`
	Keys      []string  `json:"keys"`
	UpdatedAt time.Time `json:"updatedAt"`
}
