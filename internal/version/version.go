// Package version holds Ferry's version, set at link time by the Makefile.
package version

// Version is Ferry's version; `make` sets it from git describe.
var Version = "dev"
