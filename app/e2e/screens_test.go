//go:build !js

package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// shots saves what the page shows in the four looks a person may see it in: desktop
// (1280x900) and phone (393x851), light and dark, as artifacts/NAME-{desktop,phone}-
// {light,dark}.png. focus, when not "", is the CSS selector of what the pictures are of:
// after each change of size it is waited for and scrolled to the middle of the screen.
// The page is left desktop, light.
func (b *browser) shots(t *testing.T, name, focus string) {
	t.Helper()
	sizes := []struct {
		name string
		size chromedp.Action[chromedp.Void]
	}{
		{"desktop", chromedp.EmulateViewport(1280, 900)},
		{"phone", chromedp.EmulateViewport(393, 851, chromedp.EmulateScale(2.75), chromedp.EmulateMobile)},
	}
	for _, size := range sizes {
		for _, scheme := range []string{"light", "dark"} {
			b.do(t, size.size, setScheme(scheme))
			if focus != "" {
				b.waitFor(t, name+" "+size.name+" "+scheme, fmt.Sprintf(`!!document.querySelector(%q)`, focus))
				b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).scrollIntoView({block: "center"})`, focus)))
			}
			b.screenshot(t, name+"-"+size.name+"-"+scheme+".png")
		}
	}
	b.do(t, chromedp.EmulateViewport(1280, 900), setScheme("light"))
}

func setScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
		return err
	})
}
