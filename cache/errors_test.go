package cache

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/acv/acv/api/contract"
	"github.com/redis/go-redis/v9"
)

// replyError is an error reply of the Redis server, as go-redis reports one.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// TestTranslateUnavailable: every Redis error that means "not now" becomes a refusal of kind
// unavailable (503) with the cause still in its chain; every other error is left as it is.
func TestTranslateUnavailable(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"loading", replyError("LOADING Redis is loading the dataset in memory"), true},
		{"loading, wrapped", fmt.Errorf("run apply script: %w", replyError("LOADING Redis is loading the dataset in memory")), true},
		{"master down", replyError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{"try again", replyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"cluster down", replyError("CLUSTERDOWN The cluster is down"), true},
		{"slot moved", replyError("MOVED 3999 127.0.0.1:6381"), true},
		{"slot migrating", replyError("ASK 3999 127.0.0.1:6381"), true},
		{"busy with a script", replyError("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."), true},
		{"read-only replica", replyError("READONLY You can't write against a read only replica."), true},
		{"max clients", replyError("ERR max number of clients reached"), true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"client closed", redis.ErrClosed, true},
		{"connection refused", dial, true},
		{"connection reset", reset, true},
		{"connection closed by the server", io.EOF, true},
		{"reply cut short", fmt.Errorf("read reply: %w", io.ErrUnexpectedEOF), true},

		{"nil", nil, false},
		{"no value", redis.Nil, false},
		{"consumer group exists", replyError("BUSYGROUP Consumer Group name already exists"), false},
		{"target key exists", replyError("BUSYKEY Target key name already exists."), false},
		{"no script", redis.ErrNoScript, false},
		{"script error", replyError("ERR user_script:12: attempt to compare nil with number"), false},
		{"wrong type", replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"out of memory", replyError("OOM command not allowed when used memory > 'maxmemory'."), false},
		{"our own fault", errors.New("decode apply reply: element 2 is not an integer"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := translate(tc.err)
			if !tc.unavailable {
				if got != tc.err {
					t.Fatalf("translate(%v) = %v, want it unchanged", tc.err, got)
				}
				return
			}
			if k := contract.KindOf(got); k != contract.KindUnavailable {
				t.Fatalf("translate(%v): kind %q, want %q", tc.err, k, contract.KindUnavailable)
			}
			if !errors.Is(got, tc.err) {
				t.Fatalf("translate(%v) = %v: the cause is not in the chain", tc.err, got)
			}
			var ce *contract.Error
			if errors.As(got, &ce); ce.Message != "Service temporarily unavailable" {
				t.Fatalf("translate(%v): message %q names more than it should", tc.err, ce.Message)
			}
		})
	}
}
