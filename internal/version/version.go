// Package version is the one source of skillbus's version: every binary's
// --version, the version each NATS micro service reports (`nats micro
// info`), and the MCP client version the bridge announces.
//
// A release sets it at link time:
//
//	go build -ldflags "-X github.com/skillbus/skillbus/internal/version.Version=v1.2.0" ./cmd/...
//
// Without that, the Go build information decides: a binary installed with
// `go install github.com/skillbus/skillbus/cmd/...@v1.2.0` reports v1.2.0,
// one built in a git checkout reports the pseudo-version the go command
// stamps (v0.0.0-20260102150405-abcdef123456, with +dirty for uncommitted
// changes), and a build without either reports DevVersion. See
// docs/operations.md ("Version").
package version

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// Version is set at release with -ldflags -X (see the package
// documentation); empty means "take it from the Go build information".
// It is a variable only because the linker can set nothing else; nothing
// in skillbus assigns it.
var Version = ""

// DevVersion is reported by a build that carries no version at all (go run,
// go test, a build outside a module checkout). It is valid SemVer, as the
// NATS micro protocol requires.
const DevVersion = "0.0.0-dev"

// semver is the SemVer 2.0.0 grammar (semver.org), the one the NATS micro
// protocol checks service versions against.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// String returns the version as built, without a leading "v": the value set
// with -ldflags -X if any, else the main module's version from the Go build
// information, else DevVersion. It is always valid SemVer: a -X value that
// is not SemVer is returned as DevVersion plus the value as build metadata
// where that is possible, else DevVersion.
func String() string {
	return resolve(Version, mainVersion())
}

// resolve picks the version from the linker value and the build
// information's main module version (either may be empty).
func resolve(linked, module string) string {
	for _, v := range []string{linked, module} {
		v = strings.TrimPrefix(strings.TrimSpace(v), "v")
		if v == "" || v == "(devel)" {
			continue
		}
		if semver.MatchString(v) {
			return v
		}
		if meta := strings.Trim(nonMeta.ReplaceAllString(v, "-"), "-"); meta != "" {
			return DevVersion + "+" + meta
		}
	}
	return DevVersion
}

// nonMeta matches the characters SemVer build metadata cannot hold.
var nonMeta = regexp.MustCompile(`[^0-9A-Za-z-]+`)

// mainVersion returns the main module's version from the build
// information, or "".
func mainVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return bi.Main.Version
}
