package config

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// registeredModelTypes are the model types a program added with
// RegisterModelType, in registration order.
var registeredModelTypes struct {
	sync.RWMutex
	names []string
}

// providerKeys are the `model:` keys of the provider types (openai,
// anthropic); they apply to registered types as well.
var providerKeys = []string{"model", "base_url", "api_key", "api_key_env", "temperature", "timeout"}

// RegisterModelType makes manifests accept a model type that the program
// provides: `model: TYPE`, `model: TYPE:MODEL` and the mapping form
// `{type: TYPE, ...}` with the keys of the provider types (model,
// base_url, api_key, api_key_env, temperature, max_tokens, timeout,
// input_price, output_price; none is required). The parser only accepts the
// type: whoever builds the model (pool.RegisterModel, which calls this)
// checks the rest. Registering a builtin or an already registered type does
// nothing. It panics when typ is not a name (a letter, then letters,
// digits, "_" and "-").
func RegisterModelType(typ string) {
	if !nameRE().MatchString(typ) {
		panic(fmt.Sprintf("config: RegisterModelType: invalid model type %q", typ))
	}
	r := &registeredModelTypes
	r.Lock()
	defer r.Unlock()
	if !contains(modelTypes, typ) && !contains(r.names, typ) {
		r.names = append(r.names, typ)
	}
}

// ModelTypes lists the model types a manifest accepts: the builtin ones
// (test, scripted, openai, anthropic), then the registered ones in
// registration order.
func ModelTypes() []string {
	r := &registeredModelTypes
	r.RLock()
	defer r.RUnlock()
	return append(slices.Clip(modelTypes), r.names...)
}

// isRegisteredModelType reports whether typ was added by RegisterModelType.
func isRegisteredModelType(typ string) bool {
	r := &registeredModelTypes
	r.RLock()
	defer r.RUnlock()
	return contains(r.names, typ)
}

// modelKeyTypesFor lists the model types a `model:` key applies to (nil:
// every type): modelKeyTypes, with the registered types added to the keys
// of the provider types.
func modelKeyTypesFor(key string) []string {
	types := modelKeyTypes[key]
	if types == nil || !contains(providerKeys, key) {
		return types
	}
	r := &registeredModelTypes
	r.RLock()
	defer r.RUnlock()
	return append(slices.Clip(types), r.names...)
}

// andList joins names as "a, b and c".
func andList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
