package scale

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Counters are the live numbers of a run.
type Counters struct {
	N, Created, Ready, Routed, Stuck, Failed int
	Probing                                  bool
	Elapsed                                  time.Duration
}

// ProgressLine is one line of progress: a bar when width > 0 (█ Ready, ▒ created
// and not yet Ready), then the counts.
func ProgressLine(c Counters, width int) string {
	var b strings.Builder
	if width > 0 && c.N > 0 {
		ready := c.Ready * width / c.N
		created := max(c.Created*width/c.N, ready)
		b.WriteString("[")
		b.WriteString(strings.Repeat("█", ready))
		b.WriteString(strings.Repeat("▒", created-ready))
		b.WriteString(strings.Repeat(" ", width-created))
		b.WriteString("] ")
	}
	fmt.Fprintf(&b, "created %d/%d  ready %d", c.Created, c.N, c.Ready)
	if c.Probing {
		fmt.Fprintf(&b, "  routed %d", c.Routed)
	}
	fmt.Fprintf(&b, "  stuck %d", c.Stuck)
	if c.Failed > 0 {
		fmt.Fprintf(&b, "  failed %d", c.Failed)
	}
	fmt.Fprintf(&b, "  %s", fmtDur(c.Elapsed.Round(100*time.Millisecond)))
	return b.String()
}

// progress draws the counters: a bar redrawn in place on a terminal, a plain line
// every interval otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	interval time.Duration
	last     time.Time
	lastLine string
}

func newProgress(w io.Writer, terminal bool) *progress {
	if w == nil {
		w = io.Discard
	}
	return &progress{w: w, terminal: terminal, interval: 5 * time.Second}
}

// show draws c; final ends the bar's line.
func (p *progress) show(c Counters, final bool) {
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", ProgressLine(c, 30))
		if final {
			fmt.Fprintln(p.w)
		}
		return
	}
	now := time.Now()
	if !final && now.Sub(p.last) < p.interval {
		return
	}
	line := ProgressLine(c, 0)
	if final && line == p.lastLine {
		return
	}
	p.last, p.lastLine = now, line
	fmt.Fprintln(p.w, line)
}
