package faults_test

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// groupView is the consumer group as its coordinator describes it.
type groupView struct {
	State string
	// Assigned holds, per member, how many partitions of the topic it was given.
	Assigned []int
}

func (g groupView) String() string {
	return fmt.Sprintf("%s, members' partitions %v", g.State, g.Assigned)
}

// describeGroup asks the group's coordinator (kafka-go routes the request to it) for the
// group's state and assignments.
func describeGroup(ctx context.Context, brokers []string, group, topic string) (groupView, error) {
	tr := &kafka.Transport{DialTimeout: 2 * time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second, Transport: tr}
	res, err := cl.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
	if err != nil {
		return groupView{}, err
	}
	if len(res.Groups) != 1 {
		return groupView{}, fmt.Errorf("describe group %s: %d groups answered", group, len(res.Groups))
	}
	g := res.Groups[0]
	if g.Error != nil {
		return groupView{}, fmt.Errorf("describe group %s: %w", group, g.Error)
	}
	v := groupView{State: g.GroupState}
	for _, m := range g.Members {
		n := 0
		for _, a := range m.MemberAssignments.Topics {
			if a.Topic == topic {
				n += len(a.Partitions)
			}
		}
		v.Assigned = append(v.Assigned, n)
	}
	return v, nil
}

// waitGroup waits until the group is stable with members members, each given partitions and
// all partitions given, and returns how long that took from since: a rebalance's duration.
func (d *deployment) waitGroup(members int, since time.Time, within time.Duration) time.Duration {
	d.t.Helper()
	var last groupView
	var err error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last, err = describeGroup(ctx, d.brokers(), d.group(), d.topic())
		cancel()
		if err == nil && last.State == "Stable" && len(last.Assigned) == members {
			total, each := 0, true
			for _, n := range last.Assigned {
				total += n
				each = each && n > 0
			}
			if each && total == d.s.Config.Partitions {
				return time.Since(since)
			}
		}
		if time.Since(since) > within {
			d.t.Fatalf("the consumer group is not stable with %d members %s later: %s (%v)", members, within, last, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
