package main

// This file is also the router's matcher in the browser build: slimapp writes it into the
// copy of go-app (as route_pattern.go, package app), and route.go there calls
// mustCompileRoute where upstream calls regexp.MustCompile. regexp and its syntax tables
// cost about 90 KB of app.wasm.br, and Conch's patterns need only this. slimapp checks
// every pattern Conch registers with compileRoute before the build, so none panics there.

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// routeSegment is the one regular expression a pattern may hold besides its anchors: the
// characters of one path segment.
const routeSegment = "[^/]+"

// routePattern is a compiled pattern: its literal text in order, "" standing for each
// routeSegment.
type routePattern []string

// compileRoute reads a pattern of the shape "^/tasks/[^/]+/changes$": anchored at both
// ends, literal text and routeSegment. It says why when the pattern is anything else.
func compileRoute(pattern string) (routePattern, error) {
	rest, start := strings.CutPrefix(pattern, "^")
	rest, end := strings.CutSuffix(rest, "$")
	if !start || !end {
		return nil, fmt.Errorf("route pattern %q: not anchored with ^ and $", pattern)
	}
	var p routePattern
	for rest != "" {
		if after, ok := strings.CutPrefix(rest, routeSegment); ok {
			p, rest = append(p, ""), after
			continue
		}
		i := strings.IndexAny(rest, `\.+*?()|[]{}^$`)
		if i == 0 {
			return nil, fmt.Errorf("route pattern %q: %q is neither literal text nor %s", pattern, rest, routeSegment)
		}
		if i < 0 {
			i = len(rest)
		}
		p, rest = append(p, rest[:i]), rest[i:]
	}
	return p, nil
}

// mustCompileRoute is compileRoute for go-app's router, which panics on a bad pattern as
// regexp.MustCompile does.
func mustCompileRoute(pattern string) *routePattern {
	p, err := compileRoute(pattern)
	if err != nil {
		panic(err)
	}
	return &p
}

// MatchString reports whether path matches the whole pattern (the name regexp gives it, so
// go-app's router calls it unchanged).
func (p *routePattern) MatchString(path string) bool {
	return matchRoute(*p, path)
}

func matchRoute(p routePattern, path string) bool {
	if len(p) == 0 {
		return path == ""
	}
	if p[0] != "" {
		rest, ok := strings.CutPrefix(path, p[0])
		return ok && matchRoute(p[1:], rest)
	}
	for i := 0; i < len(path) && path[i] != '/'; { // a character at a time, as regexp reads
		_, n := utf8.DecodeRuneInString(path[i:])
		if i += n; matchRoute(p[1:], path[i:]) {
			return true
		}
	}
	return false
}
