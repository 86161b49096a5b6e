package console

import (
	"context"
	"time"
)

// PipelineHealth is the state of the log pipeline as the dashboard shows it: what waits in
// Redis's outboxes, and how old the newest log written to PostgreSQL is.
type PipelineHealth struct {
	// Known is false when the console was built without a view of the outboxes (Config.Outbox).
	Known bool
	// Backlog is how many log events wait in the outboxes; OldestAge how long the oldest has.
	Backlog   int64
	OldestAge time.Duration
	// Relays is how many relays have a live heartbeat (RelaysKnown false when the console was
	// built without Config.Relays).
	Relays      int64
	RelaysKnown bool
	// NewestLogAge is how long ago the newest log in PostgreSQL was made (HasLog false when
	// the last day has none).
	NewestLogAge time.Duration
	HasLog       bool
	// Problem says why a part could not be read; "" when all was read.
	Problem string
}

// OutboxReader reads the outboxes' backlog (audit.OutboxLen over the process's Redis).
type OutboxReader func(ctx context.Context) (length int64, oldestAge time.Duration, err error)

// RelayCounter counts the relays alive (audit.LiveRelays over the process's Redis).
type RelayCounter func(ctx context.Context) (int64, error)

// Health reads the pipeline's health for the dashboard (viewer and above). A part that cannot
// be read is reported in the health's Problem, not as an error: the dashboard is what an
// operator opens when something is wrong.
func (s *Service) Health(ctx context.Context, a Actor) (PipelineHealth, error) {
	if err := a.require(RoleViewer); err != nil {
		return PipelineHealth{}, err
	}
	now := s.now()
	var h PipelineHealth
	if s.cfg.Outbox != nil {
		if n, age, err := s.cfg.Outbox(ctx); err != nil {
			s.log.WarnContext(ctx, "dashboard: read outbox backlog", "err", err)
			h.Problem = "The outbox backlog could not be read from Redis."
		} else {
			h.Known, h.Backlog, h.OldestAge = true, n, age
		}
	}
	if s.cfg.Relays != nil {
		if n, err := s.cfg.Relays(ctx); err != nil {
			s.log.WarnContext(ctx, "dashboard: count live relays", "err", err)
			h.Problem += " The relays' heartbeats could not be read from Redis."
		} else {
			h.Relays, h.RelaysKnown = n, true
		}
	}
	if t, ok, err := s.store.NewestLog(ctx, now); err != nil {
		s.log.WarnContext(ctx, "dashboard: read newest log", "err", err)
		h.Problem += " The newest log could not be read from PostgreSQL."
	} else if ok {
		h.HasLog, h.NewestLogAge = true, max(now.Sub(t), 0)
	}
	return h, nil
}
