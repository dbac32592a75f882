// Package resources holds pure builders for what the PodAutoscaler reconciler owns.
package resources
