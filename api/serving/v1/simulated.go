package v1

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// ParseSimulatedServiceTime reads a serving.ferry.dev/simulated-service-time value;
// admission refuses what it refuses, and the gateway reads what admission let through.
func ParseSimulatedServiceTime(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// ParseSimulatedCapacity reads a serving.ferry.dev/simulated-capacity value.
func ParseSimulatedCapacity(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > math.MaxInt32 {
		return 0, errors.New("must be between 1 and 2147483647")
	}
	return n, nil
}
