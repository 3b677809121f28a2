package config

import (
	"fmt"
	"slices"
	"strings"
)

// providerKeys are the `model:` keys of the provider types (openai,
// anthropic); they apply to the program's own model types as well.
var providerKeys = []string{"model", "base_url", "api_key", "api_key_env", "temperature", "timeout"}

// WiringHint says how a program makes a model type available; it ends the
// error of a manifest whose model type the program did not wire in.
const WiringHint = "a program wires model types in with a pool.Registry (AddModel); " +
	"batteries.Registry() has openai and anthropic, and the agentpool command uses it"

// Options are what the program that reads a manifest can build. The zero
// value checks the manifest's syntax only: every model type the parser
// knows (ModelTypes) is accepted.
type Options struct {
	// ModelTypes, when not nil, are the model types the program can build
	// (pool.Registry.ModelTypes): a manifest whose model has another type
	// is an error that lists these and says how to wire one in
	// (WiringHint). A type the parser does not know itself takes the keys
	// of the provider types (model, base_url, api_key, api_key_env,
	// temperature, max_tokens, timeout, input_price, output_price; none is
	// required), and `model: TYPE` and `model: TYPE:MODEL`; whoever builds
	// the model checks the rest.
	ModelTypes []string
}

// check reports what is wrong with opts: each model type must be a name (a
// letter, then letters, digits, "_" and "-").
func (o Options) check() error {
	for _, t := range o.ModelTypes {
		if !nameRE.MatchString(t) {
			return fmt.Errorf("config: Options.ModelTypes: invalid model type %q (a letter, then letters, digits, \"_\" and \"-\")", t)
		}
	}
	return nil
}

// ModelTypes lists the model types the parser knows itself (test,
// scripted, openai, anthropic, fallback): what Parse and Load accept.
// Whether a program can build them is its registry's business.
func ModelTypes() []string {
	return slices.Clone(modelTypes)
}

// wired reports whether the program can build typ: always when it said
// nothing (Options.ModelTypes nil).
func (p *parser) wired(typ string) bool {
	return p.opts.ModelTypes == nil || contains(p.opts.ModelTypes, typ)
}

// modelTypes lists the model types a manifest may use, for messages: the
// parser's own that are wired in, in their order, then the program's own
// in its order.
func (p *parser) modelTypes() []string {
	if p.opts.ModelTypes == nil {
		return ModelTypes()
	}
	var out []string
	for _, t := range modelTypes {
		if contains(p.opts.ModelTypes, t) {
			out = append(out, t)
		}
	}
	for _, t := range p.opts.ModelTypes {
		if !contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// registered reports whether typ is one of the program's own model types
// (wired in, not known to the parser).
func (p *parser) registered(typ string) bool {
	return !contains(modelTypes, typ) && contains(p.opts.ModelTypes, typ)
}

// recognized reports whether typ names a model type: the parser's own or
// the program's.
func (p *parser) recognized(typ string) bool {
	return contains(modelTypes, typ) || p.registered(typ)
}

// checkWired reports a model whose type the program cannot build.
func (p *parser) checkWired(ms ModelSpec, path string) {
	if ms.Type == "" || p.wired(ms.Type) {
		return
	}
	what := quote(ms.Type)
	if ms.Provider != "" {
		what += " (provider " + quote(ms.Provider) + ")"
	}
	p.add(ms.Line, path, "model type %s is not wired into this program (wired: %s); %s", what, strings.Join(p.modelTypes(), ", "), WiringHint)
}

// modelKeyTypesFor lists the model types a `model:` key applies to (nil:
// every type): modelKeyTypes, with the program's own types added to the
// keys of the provider types.
func (p *parser) modelKeyTypesFor(key string) []string {
	types := modelKeyTypes[key]
	if types == nil || !contains(providerKeys, key) {
		return types
	}
	for _, t := range p.opts.ModelTypes {
		if p.registered(t) {
			types = append(slices.Clip(types), t)
		}
	}
	return types
}

// andList joins names as "a, b and c".
func andList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
