package scale

import (
	"time"

	"github.com/ferry-serving/ferry/internal/explain"
)

// fmtDur is the explainer's duration format, so that the reports and the
// explanations agree.
func fmtDur(d time.Duration) string { return explain.FormatDuration(d) }
