package provider

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

const key = "sk-SECRET-0123456789"

func endpoint(t *testing.T, mod func(*Config)) *Endpoint {
	t.Helper()
	cfg := Config{
		Name: "prov", Model: "m", BaseURL: "https://user:pw@api.example.com/v1", APIKey: key,
		EnvAPIKey: "PROV_API_KEY", EnvBaseURL: "PROV_BASE_URL", DefaultBaseURL: "https://api.example.com",
		URLForm: "http(s)://host", OfficialHost: "api.example.com", DefaultMaxRetries: 3, Timeout: time.Second,
	}
	if mod != nil {
		mod(&cfg)
	}
	e, err := Setup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestErrorsNeverShowKey(t *testing.T) {
	e := endpoint(t, nil)
	st := &CallState{Attempts: 2, Status: http.StatusUnauthorized}
	cause := errors.New("cause " + key)
	for _, err := range []*Error{
		e.StatusError(st, http.StatusText(st.Status), "bad key "+key, cause),
		e.StreamError(st, "echo "+key, cause),
		e.CallError(st, cause, true),
		e.CallError(st, cause, false),
		e.NewError(0, key, cause),
	} {
		if strings.Contains(err.Error(), key) || strings.Contains(err.Message, key) || strings.Contains(err.Error(), "pw@") {
			t.Errorf("leak: %q / %q", err.Error(), err.Message)
		}
		if !strings.HasPrefix(err.Error(), "prov: ") || !errors.Is(err, cause) {
			t.Errorf("text or cause: %q", err.Error())
		}
	}
	want := "prov: 401 unauthorized: bad key [redacted] (check the API key: api_key / api_key_env in the manifest or PROV_API_KEY) (gave up after 2 attempts)"
	if got := e.StatusError(st, "Unauthorized", "bad key "+key, nil).Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		body     string
		detail   bool
		typ, msg string
	}{
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false, "overloaded_error", "Overloaded"},
		{`{"error":"model not found"}`, false, "", "model not found"},
		{`{"message":"m"}`, false, "", "m"},
		{`{"detail":"d"}`, true, "", "d"},
		{`{"detail":[{"loc":1}]}`, true, "", `[{"loc":1}]`},
		{`{"detail":"d"}`, false, "", `{"detail":"d"}`},
		{"  <html>\n bad  gateway </html> ", false, "", "<html> bad gateway </html>"},
		{strings.Repeat("y", 400), false, "", strings.Repeat("y", 400)}, // whole: shortened after redaction
		{"", true, "", ""},
	} {
		typ, msg := ErrorMessage([]byte(tc.body), tc.detail)
		if typ != tc.typ || msg != tc.msg {
			t.Errorf("%.40s: got %q %q, want %q %q", tc.body, typ, msg, tc.typ, tc.msg)
		}
	}
}

func TestSetup(t *testing.T) {
	t.Setenv("PROV_API_KEY", "")
	t.Setenv("PROV_BASE_URL", "")
	if _, err := Setup(Config{Name: "prov"}); err == nil || err.Error() != "prov: model id is required" {
		t.Fatalf("err = %v", err)
	}
	_, err := Setup(Config{Name: "prov", Model: "m", BaseURL: "ftp://u:pw@h", URLForm: "http(s)://host"})
	if err == nil || err.Error() != `prov: invalid base URL "ftp://h": want http(s)://host` {
		t.Fatalf("err = %v", err)
	}
	for _, bad := range []struct{ url, want string }{
		{"https://h/v1#frag", `prov: invalid base URL "https://h/v1#frag": a fragment (#...) is never sent; remove it`},
		{"https://h/v1?key=%zz", `prov: invalid base URL "https://h/v1": bad query: invalid URL escape "%zz"`},
	} {
		if _, err := Setup(Config{Name: "prov", Model: "m", BaseURL: bad.url}); err == nil || err.Error() != bad.want {
			t.Errorf("base URL %s: err = %v, want %s", bad.url, err, bad.want)
		}
	}
	e := endpoint(t, func(c *Config) { c.BaseURL = "https://h.example/v1?api-version=1&x=a%2Fb" })
	if e.BaseURL != "https://h.example/v1" || e.Query.Encode() != "api-version=1&x=a%2Fb" {
		t.Errorf("base URL %q, query %v: want the query apart, to send with every request", e.BaseURL, e.Query)
	}
	e = endpoint(t, func(c *Config) { c.BaseURL, c.APIKey, c.MaxRetries = "", "", -1 })
	if !e.Official || e.Retries != 0 || e.HTTPClient == nil || e.BaseURL != "https://api.example.com" {
		t.Fatalf("endpoint %+v", e)
	}
	if err := e.MissingKey(); err == nil || err.Error() != "prov: no API key: set PROV_API_KEY, or api_key / api_key_env in the manifest" {
		t.Fatalf("err = %v", err)
	}
	e = endpoint(t, func(c *Config) { c.BaseURL, c.APIKey = "http://127.0.0.1:1", "" })
	if err := e.MissingKey(); err != nil || e.Retries != 3 {
		t.Fatalf("a local server needs no key: %v, retries %d", err, e.Retries)
	}
}

// A key the server echoes is redacted wherever the message is cut: the
// cut comes after the redaction.
func TestRedactBeforeShortening(t *testing.T) {
	const key = "sk-test-0123456789abcdefghijklmnopqrstuvwxyz"
	e, err := Setup(Config{Name: "openai", Model: "m", APIKey: key, DefaultBaseURL: "https://api.example.test/v1", URLForm: "http(s)://host[:port]/v1"})
	if err != nil {
		t.Fatal(err)
	}
	for pad := 250; pad <= 300; pad++ {
		for _, body := range []string{
			strings.Repeat("x", pad) + " invalid key " + key, // a plain body
			`{"error":{"message":"` + strings.Repeat("x", pad) + ` invalid key ` + key + `"}}`,
		} {
			_, msg := ErrorMessage([]byte(body), false)
			checkNoKey(t, e, pad, key, msg)
		}
	}
}

func checkNoKey(t *testing.T, e *Endpoint, pad int, key, msg string) {
	t.Helper()
	{
		for _, x := range []*Error{e.StatusError(&CallState{Status: 401, Attempts: 1}, "Unauthorized", msg, nil), e.StreamError(&CallState{}, msg, nil)} {
			for _, s := range []string{x.Error(), x.Message} {
				if strings.Contains(s, key[:12]) {
					t.Fatalf("pad %d: a part of the key leaked: %q", pad, s)
				}
				if len(s) > 600 {
					t.Fatalf("pad %d: message not shortened (%d bytes)", pad, len(s))
				}
			}
		}
	}
}

func TestSafeURLHidesCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pass@host.test/v1":                         "https://host.test/v1",
		"https://host.test/v1?key=SECRET&api-version=2024-06-01": "https://host.test/v1?api-version=2024-06-01&key=%5Bredacted%5D",
		"http://127.0.0.1:11434/v1":                              "http://127.0.0.1:11434/v1",
	} {
		if got := safeURL(in); got != want || strings.Contains(got, "SECRET") || strings.Contains(got, "pass") {
			t.Errorf("safeURL(%q) = %q, want %q", in, got, want)
		}
	}
}
