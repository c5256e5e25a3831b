// Package ifbusy holds the end-to-end tests of a message sent to a run with a turn in flight
// (POST /v2/agentruns/RUN/messages with ifBusy: enqueue, reject, interrupt, rollback) on the real
// binary, with a scripted model call made slow so the message arrives while it is in flight.
package ifbusy
