package main

import (
	"time"

	"github.com/ferry-serving/ferry/internal/loadgen"
	"github.com/spf13/cobra"
)

func newLoadCommand() *cobra.Command {
	var o loadgen.Options
	cmd := &cobra.Command{
		Use:   "load URL -c N -d DURATION [--host H]",
		Short: "Send steady load to a local gateway and report requests/s, status codes and latency percentiles",
		Long: `Run N workers that each send one GET after another to URL for DURATION (or until
-n requests), as hey does, then print the requests per second, the count of each status
code, and the p50, p90 and p99 latencies.

It is for trying autoscaling on ferry up: the URL must be a loopback address (such as
the gateway's http://127.0.0.1:8080), --host names the Service's host, and with the
Revision annotation serving.ferry.dev/simulated-service-time (or ?sleep=MS in the URL)
each simulated pod takes that long to answer, so the load is concurrency the
autoscaler sees. At most 1000 workers, 10 minutes and 1,000,000 requests.`,
		Example: `  ferry load http://127.0.0.1:8080 --host load.default.example.com -c 20 -d 30s
  ferry load 'http://127.0.0.1:8080/?sleep=500' --host autoscale.default.example.com -c 10 -d 1m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.URL = args[0]
			res, err := loadgen.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			res.Print(cmd.OutOrStdout())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&o.Concurrency, "concurrency", "c", 10, "workers, each with one request in flight")
	fl.DurationVarP(&o.Duration, "duration", "d", 10*time.Second, "how long to send")
	fl.IntVarP(&o.Requests, "requests", "n", 0, "stop after this many requests (0: only the duration ends the run)")
	fl.StringVar(&o.Host, "host", "", "the Host header: the Service's host, e.g. load.default.example.com")
	fl.DurationVar(&o.Timeout, "timeout", 30*time.Second, "give up on one request after this long")
	return cmd
}
