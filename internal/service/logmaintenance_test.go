package service_test

import (
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/acv/acv/internal/service"
)

func TestLogRetentionSetting(t *testing.T) {
	for _, tc := range []struct {
		env  string
		days int
		bad  bool
	}{
		{"", contract.DefaultLogRetentionDays, false},
		{"400", 400, false},
		{"30d", 30, false},
		{" 0 ", 0, false},
		{"-1", 0, true},
		{"1y", 0, true},
		{"720h", 0, true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(service.LogRetentionEnv, tc.env)
			cfg, err := service.FromEnv()
			p := service.LogPolicy(cfg)
			if (err != nil) != tc.bad {
				t.Fatalf("%s=%q: err = %v, want error %v", service.LogRetentionEnv, tc.env, err, tc.bad)
			}
			if !tc.bad && (p.RetentionDays != tc.days || p.Ahead != contract.DefaultLogPartitionsAhead) {
				t.Errorf("%s=%q: policy %+v, want %d days kept", service.LogRetentionEnv, tc.env, p, tc.days)
			}
		})
	}
}
