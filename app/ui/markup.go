package ui

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
)

// How values become attributes. go-app writes the attributes of a page rendered on the
// server (the prerender, which the service worker also keeps) with Go's string quoting
// (strconv.Quote), which is not HTML escaping, and writes a false boolean attribute as
// disabled="false", which a browser reads as disabled. In the browser it sets attributes
// through the DOM, where any text is only text. Every attribute in this package is a
// constant, a number, a Conch id, a class from a fixed set, a boolean set through disabled
// or selected, or
// text passed through attrText.

// attrText is text (an agent's, a person's) for an attribute's value. On the server every
// character that Go's quoting would change (", \, what strconv.IsPrint rejects, invalid
// UTF-8) and every character with a meaning in HTML (& < > ') becomes a numeric character
// reference: the quoting keeps it as it is, and the browser reads the character back.
// (NUL and invalid UTF-8 read back as U+FFFD, as in any HTML.) In the browser s is set raw.
func attrText(s string) string {
	if app.IsClient || strings.IndexFunc(s, needsReference) < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+len(s)/4)
	for _, r := range s { // invalid UTF-8 comes as utf8.RuneError, written as a reference
		if needsReference(r) {
			b = append(b, "&#"...)
			b = strconv.AppendInt(b, int64(r), 10)
			b = append(b, ';')
		} else {
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

func needsReference(r rune) bool {
	return r == utf8.RuneError || !strconv.IsPrint(r) || strings.ContainsRune(`"\&<>'`, r)
}

// disabled and selected set their boolean attribute only when v is true: absent is false.
func disabled[E interface{ Disabled(bool) E }](e E, v bool) E {
	if v {
		return e.Disabled(true)
	}
	return e
}

// checked is a checkbox checked when v. In the browser it is set either way, as the
// property: a box the person clicked no longer follows its attribute.
func checked(e app.HTMLInput, v bool) app.HTMLInput {
	if v || app.IsClient {
		return e.Checked(v)
	}
	return e
}

func selected[E interface{ Selected(bool) E }](e E, v bool) E {
	if v {
		return e.Selected(true)
	}
	return e
}
