package localenv_test

import (
	"context"
	"net"
	"testing"

	"github.com/acv/acv/internal/localenv"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { localenv.Main(m) }

func TestServersAnswer(t *testing.T) {
	ctx := context.Background()
	url := localenv.PostgresDB(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "select 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("select 1 = %d, %v", one, err)
	}
	r := localenv.RedisServer(t, localenv.RedisOptions{AOF: true})
	c, err := net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("PING\r\n"))
	buf := make([]byte, 16)
	n, _ := c.Read(buf)
	if string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("PING answered %q", buf[:n])
	}
	k := localenv.KafkaBroker(t, "x", 2)
	if len(k.Brokers) == 0 {
		t.Fatal("no broker address")
	}
}
