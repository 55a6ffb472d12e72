//go:build race

package integration

// raceBuild is true when this test binary is built with -race: a binary
// the tests build (go build) is then built with -race too, so that it
// reuses the race-instrumented packages the test binary's own build left
// in the build cache instead of compiling every package again.
const raceBuild = true
