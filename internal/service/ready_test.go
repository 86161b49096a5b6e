package service_test

import (
	"reflect"
	"testing"

	"github.com/acv/acv/internal/service"
)

// /readyz answers 503 only when a dependency the process's roles cannot work without is down:
// an API replica stays ready (degraded) while Kafka or PostgreSQL is down, since it still
// verifies, and a pipeline worker goes unready when its own dependencies are. A consumer role
// in the direct pipeline runs nothing, so it gates nothing: an api,consumer process there is an
// API replica.
func TestReadinessGatesPerRole(t *testing.T) {
	api := service.Roles{API: true}
	relay := service.Roles{Relay: true}
	consumer := service.Roles{Consumer: true}
	all := service.Roles{API: true, Relay: true, Consumer: true}
	brokers := []string{"kafka:9092"}
	for _, tc := range []struct {
		name    string
		roles   service.Roles
		brokers []string
		// pipeline is ACV_PIPELINE; empty picks kafka when brokers are set.
		pipeline string
		want     []string
	}{
		{"api replica, kafka pipeline", api, brokers, "", []string{"redis"}},
		{"api replica, no brokers configured", api, nil, "", []string{"redis"}},
		{"api replica, ACV_PIPELINE=kafka without brokers", api, nil, service.PipelineKafka, []string{"redis"}},
		{"api replica, direct pipeline", api, nil, service.PipelineDirect, []string{"redis"}},
		{"relay, kafka pipeline", relay, brokers, "", []string{"kafka", "redis"}},
		{"relay, direct pipeline", relay, nil, "", []string{"postgres", "redis"}},
		{"log writer (consumer), kafka pipeline", consumer, brokers, "", []string{"kafka", "postgres"}},
		{"relay and consumer, kafka pipeline", service.Roles{Relay: true, Consumer: true}, brokers, "", []string{"kafka", "postgres", "redis"}},
		{"api and consumer, direct pipeline", service.Roles{API: true, Consumer: true}, brokers, service.PipelineDirect, []string{"redis"}},
		{"every role, kafka pipeline", all, brokers, "", []string{"kafka", "postgres", "redis"}},
		{"every role, direct pipeline", all, nil, "", []string{"postgres", "redis"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := service.Config{Roles: tc.roles, KafkaBrokers: tc.brokers, Pipeline: tc.pipeline}
			var got []string
			for _, dep := range []string{"kafka", "postgres", "redis"} {
				if cfg.ReadinessGates()[dep] {
					got = append(got, dep)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("unready when one of %v is down, want %v", got, tc.want)
			}
		})
	}
}
