package api

import "github.com/gofiber/fiber/v2"

// contentSecurityPolicy is what a page of Conch may do. Scripts, styles, images, the
// manifest, the service worker and connections (fetch and the WebSocket) come from this
// origin only; 'wasm-unsafe-eval' lets it compile app.wasm and allows no eval of scripts.
// No inline script and no inline style, style attributes included: the UI styles by
// class (app.css), and go-app's page has no inline script (web/conch.js is a file). No
// plugins, no <base>, forms post only here, and no page anywhere may frame it.
const contentSecurityPolicy = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; " +
	"img-src 'self'; connect-src 'self'; manifest-src 'self'; worker-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// setSecurityHeaders goes on every answer: pages, API answers, files, errors.
func setSecurityHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentSecurityPolicy, contentSecurityPolicy)
	c.Set(fiber.HeaderXFrameOptions, "DENY") // for browsers without frame-ancestors
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
}

// securityHeaders is the first middleware.
func securityHeaders(c *fiber.Ctx) error {
	setSecurityHeaders(c)
	return c.Next()
}
