package cache

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/acv/acv/api/contract"
	"github.com/redis/go-redis/v9"
)

// unavailablePrefixes are the Redis error replies that mean "not now" rather than "never": the
// server is loading its dataset, its master or cluster is down, a slot is migrating or moved
// (a cluster client follows MOVED and ASK itself, and Cache.call sends a refused script again
// for a while; one reaches here only after that), a script holds the server ("BUSY " with its
// space, so BUSYGROUP and BUSYKEY stay what they are), a failover left this node a replica, or
// it has no room for one more client. A request refused with one of them may simply be sent
// again later.
var unavailablePrefixes = []string{
	"LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "MOVED ", "ASK ", "BUSY ", "READONLY", "max number of clients reached",
}

// translate turns a Redis error that means Redis is unavailable into a refusal of kind
// contract.KindUnavailable (503), keeping the cause in its chain; any other error is returned
// as it is.
func translate(err error) error {
	if err == nil || !redisUnavailable(err) {
		return err
	}
	return contract.Unavailable(err)
}

// slotInMotion tells whether err refuses a command because its slot is served by another node
// now (MOVED: moved says so) or is being migrated to one (ASK, TRYAGAIN). Such a command did
// not run.
func slotInMotion(err error) (moved, inMotion bool) {
	switch {
	case err == nil:
		return false, false
	case redis.HasErrorPrefix(err, "MOVED "):
		return true, true
	case redis.HasErrorPrefix(err, "ASK "), redis.HasErrorPrefix(err, "TRYAGAIN"):
		return false, true
	}
	return false, false
}

// redisUnavailable tells whether err says Redis cannot answer now: one of the replies above, no
// connection to be had (refused, reset, closed, the pool exhausted), or the network failing.
func redisUnavailable(err error) bool {
	for _, p := range unavailablePrefixes {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	if errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) || errors.Is(err, redis.ErrClosed) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	return false
}
