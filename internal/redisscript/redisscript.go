// Package redisscript is the one way acv calls Redis scripts: each Lua file runs as a Redis
// Function (FCALL) whose reply is an array led by an explicit status number. A cluster does not
// copy libraries between masters, so Load loads on every master, and a call answered "Function
// not found" loads it there and is sent again, once. Names carry a digest of the source, so
// during a rolling deploy each replica calls the version it was built with.
package redisscript

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script, a Redis Function of its own library.
type Script struct {
	base string // the script's name without the digest, for errors
	name string // the function's name, also its library's
	lib  string // the library's source, for FUNCTION LOAD
}

// New makes the script body a library of one function named base plus a digest of its source;
// what prelude defines (run once, when the library loads) is the body's upvalues.
func New(base, prelude, body string) *Script {
	sum := sha1.Sum([]byte(prelude + body))
	name := base + "_" + hex.EncodeToString(sum[:6])
	return &Script{base: base, name: name, lib: "#!lua name=" + name + "\n" + prelude +
		"redis.register_function('" + name + "', function(KEYS, ARGV)\n" + body + "\nend)\n"}
}

// Name is the function's name.
func (s *Script) Name() string { return s.name }

// Client is what calls scripts: *redis.Client or *redis.ClusterClient.
type Client interface {
	FCall(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd
	FunctionLoad(ctx context.Context, code string) *redis.StringCmd
	Pipeline() redis.Pipeliner
}

// cluster is a Redis Cluster client's view of its masters (*redis.ClusterClient fits).
type cluster interface {
	ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
}

// Load loads the library on every master of a cluster, or on the one Redis.
func (s *Script) Load(ctx context.Context, c Client) error {
	load := func(ctx context.Context, c Client) error {
		if err := c.FunctionLoad(ctx, s.lib).Err(); err != nil && !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("load redis function %s: %w", s.name, err)
		}
		return nil
	}
	if cl, ok := c.(cluster); ok {
		return cl.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return load(ctx, m) })
	}
	return load(ctx, c)
}

// Call is one script call: what to send and, once sent, its reply or error.
type Call struct {
	Script *Script
	Keys   []string
	Args   []interface{}
	Reply  interface{}
	Err    error
}

// Run sends one call and returns its reply.
func (s *Script) Run(ctx context.Context, c Client, keys []string, args ...interface{}) (interface{}, error) {
	call := &Call{Script: s, Keys: keys, Args: args}
	Send(ctx, c, []*Call{call}, nil)
	return call.Reply, call.Err
}

// Tail queues commands after a pipeline's calls (a WAIT) and returns the check of their
// replies, which becomes the error of every call of that pipeline that succeeded.
type Tail func(ctx context.Context, p redis.Pipeliner) (check func() error)

// Send sends calls in one pipeline, followed by tail's commands, and gives each call its reply
// or error. Calls answered "Function not found" did not run: their libraries are loaded and
// they are sent again, with tail.
func Send(ctx context.Context, c Client, calls []*Call, tail Tail) {
	if len(calls) == 0 {
		return
	}
	send(ctx, c, calls, tail)
	var again []*Call
	var loaded map[*Script]error // allocated only when a library is missing
	for _, call := range calls {
		if call.Err == nil || !strings.Contains(call.Err.Error(), "Function not found") {
			continue
		}
		err, done := loaded[call.Script]
		if !done {
			err = call.Script.Load(ctx, c)
			if loaded == nil {
				loaded = map[*Script]error{}
			}
			loaded[call.Script] = err
		}
		if err == nil {
			again = append(again, call)
		}
	}
	if len(again) > 0 {
		send(ctx, c, again, tail)
	}
}

func send(ctx context.Context, c Client, calls []*Call, tail Tail) {
	if len(calls) == 1 && tail == nil {
		call := calls[0]
		call.Reply, call.Err = c.FCall(ctx, call.Script.name, call.Keys, call.Args...).Result()
		return
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(calls))
	for i, call := range calls {
		cmds[i] = pipe.FCall(ctx, call.Script.name, call.Keys, call.Args...)
	}
	var check func() error
	if tail != nil {
		check = tail(ctx, pipe)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, call := range calls {
		call.Reply, call.Err = cmds[i].Result()
		if call.Err == nil && check != nil {
			call.Err = check()
		}
	}
}

// Reply is a script's reply read strictly: a missing field or one of another type is an
// error, never a zero value.
type Reply struct {
	script string
	v      []interface{}
	err    error
}

// Decode reads v, the reply of s, as a status and fields more elements, or fails.
func (s *Script) Decode(v interface{}, fields int) (status int64, r *Reply, err error) {
	arr, ok := v.([]interface{})
	if !ok {
		return 0, nil, fmt.Errorf("%s replied %#v (%T), want an array", s.base, v, v)
	}
	if len(arr) != fields+1 {
		return 0, nil, fmt.Errorf("%s replied %d elements, want a status and %d fields", s.base, len(arr), fields)
	}
	st, ok := arr[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("%s replied the status %#v (%T), want an integer", s.base, arr[0], arr[0])
	}
	return st, &Reply{script: s.base, v: arr[1:]}, nil
}

// Int is field i (from 0, after the status), which must be an integer; see Err.
func (r *Reply) Int(i int) int64 { return field[int64](r, i, "an integer") }

// Str is field i, which must be a string.
func (r *Reply) Str(i int) string { return field[string](r, i, "a string") }

func field[T any](r *Reply, i int, want string) T {
	v, ok := r.v[i].(T)
	if !ok && r.err == nil {
		r.err = fmt.Errorf("%s reply field %d is %T, want %s", r.script, i+1, r.v[i], want)
	}
	return v
}

// Err is the first field read with the wrong type, if any.
func (r *Reply) Err() error { return r.err }

// Errorf is an error naming the script.
func (s *Script) Errorf(format string, args ...interface{}) error {
	return fmt.Errorf(s.base+": "+format, args...)
}
