package pool

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/model"
)

// ModelFactory builds the model a manifest's `model:` entry describes.
// It is called once per agent, when the pool is built.
type ModelFactory func(spec config.ModelSpec) (model.Model, error)

// models is the registry of model types: the builtin ones (test, scripted,
// openai, anthropic; see models.go) and those a program registers.
var models struct {
	sync.RWMutex
	byType map[string]ModelFactory
}

// RegisterModel makes a model type available to manifests (`model: TYPE`,
// `model: TYPE:MODEL` or `model: {type: TYPE, ...}`) and to NewModel:
// f builds the model of every agent whose model has that type. It also
// registers the type with the manifest parser (config.RegisterModelType),
// so call it before loading a manifest that uses it, typically from an
// init function. Registering a type again replaces its factory (a program
// may wrap a builtin provider). It panics when typ is not a name (a
// letter, then letters, digits, "_" and "-") or f is nil.
func RegisterModel(typ string, f ModelFactory) {
	if f == nil {
		panic(fmt.Sprintf("pool: RegisterModel(%q): nil factory", typ))
	}
	config.RegisterModelType(typ) // panics on an invalid name
	models.Lock()
	defer models.Unlock()
	if models.byType == nil {
		models.byType = map[string]ModelFactory{}
	}
	models.byType[typ] = f
}

// ModelTypes lists the registered model types, sorted.
func ModelTypes() []string {
	models.RLock()
	defer models.RUnlock()
	out := make([]string, 0, len(models.byType))
	for t := range models.byType {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// NewModel builds the model a manifest entry describes, with the factory
// registered for its type (an empty type is the test model). An
// unregistered type is an error that lists the registered ones.
func NewModel(spec config.ModelSpec) (model.Model, error) {
	typ := spec.Type
	if typ == "" {
		typ = config.ModelTest
	}
	models.RLock()
	f, ok := models.byType[typ]
	models.RUnlock()
	if !ok {
		return nil, fmt.Errorf("model type %q is not supported by this build (registered: %s)", typ, strings.Join(ModelTypes(), ", "))
	}
	m, err := f(spec)
	if err == nil && m == nil {
		err = errors.New("the factory returned no model")
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}
