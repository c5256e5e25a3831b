package computertest

var browserChecks = []Check{}
