package httpapi

import "time"

// NewWithClock is New with the clock now and the verification-log ids newEventID, for answers
// a test can compare byte for byte.
func NewWithClock(cfg Config, now func() time.Time, newEventID func() string) (*Server, error) {
	return newServer(cfg, now, newEventID)
}
