package scale

import (
	"time"

	"github.com/ferry-serving/ferry/internal/explain"
)

// The stuck-Service explainer lives in internal/explain, which `ferry explain`
// shares; these names keep the scale report's types as they were.

// Chain is what is known of one Service and the objects its readiness depends on.
type Chain = explain.Chain

// Explanation says why a Service missed its deadline, along its dependency chain.
type Explanation = explain.Explanation

// Explain walks the chain from the Service down and names the culprit.
func Explain(c Chain) Explanation { return explain.Explain(c) }

func fmtDur(d time.Duration) string { return explain.FormatDuration(d) }
