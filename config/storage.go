// AgentPool's `storage:` block (a list of storage providers and logging
// switches), mapped onto agentpool's one session store.

package config

import (
	"net/url"
	"strings"
)

// agentPoolStorageKeys are the keys of AgentPool's storage block.
var agentPoolStorageKeys = []string{
	"providers", "session_store", "default_provider", "agents", "filter_mode",
	"log_messages", "log_conversations", "log_commands", "log_context",
	"title_generation_model", "title_generation_prompt",
}

var storageProviderKeys = []string{
	"type", "url", "path", "pool_size", "auto_migration", "format", "template", "encoding",
	"log_messages", "log_conversations", "log_commands", "log_context", "agents",
}

// agentPoolStorage maps AgentPool's storage providers onto Storage.Path
// and Storage.URL: the first `sql` provider gives the database, a file
// for a SQLite URL (sqlite:///rel.db, sqlite:////abs.db; sqlite:// or
// :memory: keep nothing), Storage.URL for a PostgreSQL one
// (postgresql://..., with SQLAlchemy's driver suffix, +asyncpg or
// +psycopg, dropped), a `memory` provider or `session_store: memory` gives
// ":memory:". Text and file logs are warned about: agentpool's log is the
// session store itself (agentpool sessions show|events). Switches that
// turn logging off cannot be honoured and are warned about too.
func (p *parser) agentPoolStorage(m *Storage, f map[string]entry) {
	hasPath := m.Path != "" || m.URL != ""
	if e, ok := f["providers"]; ok {
		set := false
		for i, c := range p.list(e.val, "storage.providers") {
			ip := index("storage.providers", i)
			pf, ok := p.object(c, ip, storageProviderKeys)
			if !ok {
				continue
			}
			te, ok := pf["type"]
			if !ok {
				p.add(c.Line, ip, "missing required field \"type\" (sql, memory, file or text_file)")
				continue
			}
			typ, _ := p.word(te.val, ip+".type")
			path, pgURL := "", ""
			switch typ {
			case "sql":
				url := "sqlite:///history.db" // AgentPool's default
				if ue, ok := pf["url"]; ok {
					url = p.str(ue.val, ip+".url")
				}
				var ok bool
				if pgURL, ok = postgresURL(url); ok {
					break
				}
				if path, ok = sqlitePath(url); !ok {
					at := te.val
					if ue, ok := pf["url"]; ok {
						at = ue.val
					}
					p.add(at.Line, ip+".url", "only SQLite (sqlite:///FILE) and PostgreSQL (postgresql://...) databases are supported, got %q", redactURL(url))
					continue
				}
			case "memory":
				path = ":memory:"
			case "file", "text_file":
				p.warn(c.Line, ip, "ignored: agentpool keeps its log in the session store (agentpool sessions show|events ID)")
				continue
			default:
				p.add(te.val.Line, ip+".type", "unknown storage provider %q (sql, memory, file or text_file)", typ)
				continue
			}
			switch {
			case hasPath:
				p.add(c.Line, ip, "storage.path or storage.url is set: use either it or an sql/memory provider")
			case set:
				p.warn(c.Line, ip, "ignored: agentpool stores sessions in one database (the first sql or memory provider)")
			default:
				m.Path, m.URL, set = path, pgURL, true
			}
		}
	}
	if e, ok := f["session_store"]; ok {
		if v, ok := p.word(e.val, "storage.session_store"); ok {
			switch v {
			case "memory":
				if m.Path == "" && m.URL == "" {
					m.Path = ":memory:"
				}
			case "sql":
			default:
				p.add(e.val.Line, "storage.session_store", "unknown session store %q (sql or memory)", v)
			}
		}
	}
	for _, k := range []string{"log_messages", "log_conversations", "log_commands", "log_context"} {
		if e, ok := f[k]; ok && !p.boolean(e.val, "storage."+k, true) {
			p.warn(e.line(), "storage."+k, "ignored: agentpool stores every session's messages and events")
		}
	}
	for _, k := range []string{"agents", "filter_mode", "default_provider", "title_generation_model", "title_generation_prompt"} {
		if e, ok := f[k]; ok && !isNull(e.val) {
			p.value(e.val, "storage."+k)
			if k == "agents" || k == "title_generation_model" || k == "title_generation_prompt" {
				p.warn(e.line(), "storage."+k, "ignored: agentpool stores the sessions of every agent and titles them itself")
			}
		}
	}
}

// sqlitePath returns the database path of a SQLite URL
// ("sqlite:///history.db" -> "history.db", "sqlite:////var/h.db" ->
// "/var/h.db", "sqlite://" and "sqlite:///:memory:" -> ":memory:").
func sqlitePath(url string) (string, bool) {
	for _, pre := range []string{"sqlite+aiosqlite://", "sqlite://"} {
		if rest, ok := strings.CutPrefix(url, pre); ok {
			rest = strings.TrimPrefix(rest, "/")
			if rest == "" || rest == ":memory:" {
				return ":memory:", true
			}
			rest, _, _ = strings.Cut(rest, "?")
			return rest, true
		}
	}
	return "", false
}

// isPostgresURL reports whether u names a PostgreSQL database.
func isPostgresURL(u string) bool {
	l := strings.ToLower(u)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// postgresURL returns the postgresql:// URL of a PostgreSQL URL as
// AgentPool (SQLAlchemy) writes it: postgresql+asyncpg://... and
// postgresql+psycopg://... name a driver, which is dropped.
func postgresURL(u string) (string, bool) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return "", false
	}
	base, _, _ := strings.Cut(strings.ToLower(scheme), "+")
	if base != "postgres" && base != "postgresql" {
		return "", false
	}
	return base + "://" + rest, true
}

// redactURL hides the password of a URL in a message.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// Observability is AgentPool's `observability:` block: a tracing backend
// (logfire, langsmith, agentops, arize, custom OTLP endpoint).
type Observability struct {
	Enabled  bool
	Provider string            // its type; "" when none
	Settings map[string]any    // the provider's other keys, as written
	Headers  map[string]string // custom: OTLP headers
	Endpoint string            // custom: the OTLP endpoint
}

var observabilityTypes = []string{"logfire", "langsmith", "agentops", "arize", "custom"}

// observability reads the block. A custom provider's endpoint and headers
// are where `run` and `serve` export OTLP traces and metrics (the OTEL_*
// variables win; see tracing/otelwire.Setup); a hosted provider (logfire,
// ...) is kept but warned about, since nothing exports to it.
func (p *parser) observability(e entry, path string) Observability {
	o := Observability{Enabled: true}
	f, ok := p.object(e.val, path, []string{"enabled", "provider"})
	if !ok {
		return o
	}
	if ee, ok := f["enabled"]; ok {
		o.Enabled = p.boolean(ee.val, path+".enabled", true)
	}
	pe, ok := f["provider"]
	if !ok || isNull(pe.val) {
		return o
	}
	pp := path + ".provider"
	settings, _ := p.value(pe.val, pp).(map[string]any)
	if settings == nil {
		p.add(pe.val.Line, pp, "expected a mapping with a \"type\" (%s), got %s", strings.Join(observabilityTypes, ", "), describe(pe.val))
		return o
	}
	typ, _ := settings["type"].(string)
	if !contains(observabilityTypes, typ) {
		at := pe.val
		if tn := findKey(pe.val, "type"); tn != nil {
			at = tn
		}
		p.add(at.Line, pp+".type", "unknown observability provider %q%s", typ, orKnown(typ, observabilityTypes))
		return o
	}
	delete(settings, "type")
	o.Provider, o.Settings = typ, settings
	if s, ok := settings["endpoint"].(string); ok {
		o.Endpoint = s
	}
	if h, ok := settings["headers"].(map[string]any); ok {
		o.Headers = map[string]string{}
		for k, v := range h {
			if s, ok := v.(string); ok {
				o.Headers[k] = s
			}
		}
	}
	switch {
	case !o.Enabled:
	case typ == "custom" && o.Endpoint == "":
		p.warn(e.line(), path, "a custom provider without an endpoint exports nothing (give endpoint: the OTLP endpoint, or set OTEL_EXPORTER_OTLP_ENDPOINT)")
	case typ != "custom":
		p.warn(e.line(), path, "accepted but not exported: agentpool exports OTLP (a custom provider's endpoint, or the OTEL_* variables; see docs/tracing.md), not to %s", typ)
	}
	return o
}
