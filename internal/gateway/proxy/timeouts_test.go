package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/requestctx"
)

func TestTimeoutDue(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name     string
		limits   backends.Timeouts
		started  bool
		active   time.Duration
		elapsed  time.Duration
		wantKind timeoutKind
		wantNext time.Duration
	}{
		{name: "total only", limits: backends.Timeouts{Total: 5 * s}, elapsed: 2 * s, wantNext: 3 * s},
		{name: "total passed", limits: backends.Timeouts{Total: 5 * s}, elapsed: 5 * s, wantKind: timeoutTotal},
		{name: "response start first", limits: backends.Timeouts{Total: 5 * s, ResponseStart: 2 * s}, elapsed: s, wantNext: s},
		{name: "response start passed", limits: backends.Timeouts{Total: 5 * s, ResponseStart: 2 * s}, elapsed: 2 * s, wantKind: timeoutResponseStart},
		{name: "response started: nothing left to time", limits: backends.Timeouts{Total: 5 * s, ResponseStart: 2 * s}, started: true, elapsed: 2 * s, wantNext: noDeadline},
		{name: "response started: total no longer applies, idle does", limits: backends.Timeouts{Total: 5 * s, Idle: s}, started: true, active: 5500 * time.Millisecond, elapsed: 6 * s, wantNext: 500 * time.Millisecond},
		{name: "idle from the arrival", limits: backends.Timeouts{Total: 5 * s, Idle: s}, elapsed: s, wantKind: timeoutIdle},
		{name: "idle after activity", limits: backends.Timeouts{Total: 5 * s, Idle: s}, active: 1500 * time.Millisecond, elapsed: 2 * s, wantNext: 500 * time.Millisecond},
		{name: "idle past total", limits: backends.Timeouts{Total: 5 * s, Idle: s}, active: 4500 * time.Millisecond, elapsed: 5 * s, wantKind: timeoutTotal},
		{name: "earliest of several", limits: backends.Timeouts{Total: 5 * s, ResponseStart: 3 * s, Idle: 2 * s}, elapsed: 4 * s, wantKind: timeoutIdle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &requestTimer{limits: tc.limits}
			rt.started.Store(tc.started)
			rt.active.Store(int64(tc.active))
			if kind, next := rt.due(tc.elapsed); kind != tc.wantKind || kind == running && next != tc.wantNext {
				t.Errorf("due(%v) = %v, %v; want %v, %v", tc.elapsed, kind, next, tc.wantKind, tc.wantNext)
			}
		})
	}
}

// TestTimerStopsWithTheRequest: a request answered in time stops its timer; its
// context is not cancelled by a timeout later.
func TestTimerStopsWithTheRequest(t *testing.T) {
	rt := &requestTimer{limits: backends.Timeouts{Total: 50 * time.Millisecond}, start: time.Now()}
	ctx := requestctx.New(context.Background())
	rt.arm(ctx)
	if kind := rt.stop(); kind != running {
		t.Fatalf("stop = %v", kind)
	}
	time.Sleep(100 * time.Millisecond)
	if ctx.Err() != nil || rt.fired() != running {
		t.Errorf("after stop: context %v, fired %v", ctx.Err(), rt.fired())
	}
}
