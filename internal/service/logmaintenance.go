package service

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/acv/acv/api/contract"
)

// LogRetentionEnv names the setting of how many days of verification logs are kept.
const LogRetentionEnv = "ACV_LOG_RETENTION"

// LogMaintenanceEvery is how often a relay or consumer process keeps the log partitions.
const LogMaintenanceEvery = time.Hour

// ParseLogRetention reads a retention in whole days: "400", "400d", or "0" to keep every day.
func ParseLogRetention(v string) (int, error) { return parseDays(LogRetentionEnv, v) }

// parseDays reads a retention setting named env: a number of days, 400 or 400d.
func parseDays(env, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), "d"))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a number of days (e.g. 400 or 400d; 0 keeps every day)", env, v)
	}
	return n, nil
}

// LogPolicy is the partition policy of the verification logs: the configured retention
// (ACV_LOG_RETENTION), with contract.DefaultLogPolicy's days created ahead.
func LogPolicy(cfg Config) contract.LogPolicy {
	p := contract.DefaultLogPolicy()
	p.RetentionDays = cfg.LogRetentionDays
	return p
}

// RunLogMaintenance keeps the partitions of verification_logs every LogMaintenanceEvery until
// ctx ends; an advisory lock makes the processes take turns, and a failed run is retried at
// the next tick.
func RunLogMaintenance(ctx context.Context, d *Deps) error {
	log := d.Config.Logger
	policy := LogPolicy(d.Config)
	d.Store.MaintainLogsEvery(ctx, LogMaintenanceEvery, policy, func(res contract.LogMaintenance, err error) {
		switch {
		case err != nil:
			log.Warn("verification-log partition maintenance failed; retried at the next run",
				"err", err, "created", res.Created, "dropped", res.Dropped)
		case res.Busy:
			log.Debug("verification-log partition maintenance: another process is running it")
		case len(res.Created)+len(res.Dropped) > 0 || res.Moved+res.Purged > 0:
			log.Info("verification-log partitions maintained", "created", res.Created, "dropped", res.Dropped,
				"moved_from_default", res.Moved, "purged_from_default", res.Purged,
				"retention_days", policy.RetentionDays)
		}
	})
	return nil
}
