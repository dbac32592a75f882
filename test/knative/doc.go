// Package knative holds tests that run Ferry against Knative's own code. It is a
// separate Go module so that knative.dev/serving is a dependency of these tests only:
// the product never links it.
//
// TestDeciderMatchesKnative feeds the same random load traces to Ferry's KPA decider
// (internal/autoscaler/decider) and to Knative's (knative.dev/serving
// pkg/autoscaler/scaling, with its metric buckets and its MakeDecider/MakeMetric
// settings resolution) and requires the same desired scale at every tick, except
// where docs/autoscaling.md lists a difference Ferry chose on purpose.
//
//	cd test/knative && go test ./...                 # CI's 10,000 traces
//	FERRY_DIFF_TRACES=200000 go test -run TestDecider ./...
//	FERRY_DIFF_REPLAY=1234 go test -run TestDecider -v ./...   # one trace, tick by tick
package knative
