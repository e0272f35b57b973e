package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Catalog is a plugin's MCP catalog (plugin protocol 3) as its process
// returned it: the resources, resource templates and prompts it serves,
// each at most MaxCatalogItems, and whether it answers
// completion/complete and resources/subscribe. Immutable once parsed.
type Catalog struct {
	// Resources (key: uri), Templates (key: uriTemplate) and Prompts
	// (key: name), in the plugin's order.
	Resources, Templates, Prompts []CatItem
	// Completions and Subscribe are the plugin's MCP capabilities
	// completions and resources.subscribe.
	Completions, Subscribe bool
	// SharedTools is set when the plugin says it lists the same tools
	// to every MCP client (pluginsdk.Catalog.SharedTools): its tools/list
	// answers no client's own list.
	SharedTools bool
}

// CatItem is one resource, template or prompt: its key and its JSON.
type CatItem struct {
	// Key is the item's uri, uriTemplate or name; never empty.
	Key string
	// Raw is the item's JSON object as the plugin sent it.
	Raw json.RawMessage
}

// MaxCatalogItems bounds each list of one plugin's catalog (items).
const MaxCatalogItems = 10000

// ParseCatalog decodes a Catalog response (tool.proto). nil or empty is
// an empty catalog. Errors: not a catalog object, an item without its
// key (uri, uriTemplate, name), a list over MaxCatalogItems.
func ParseCatalog(b []byte) (*Catalog, error) {
	c := &Catalog{}
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil
	}
	var wire struct {
		Resources         []json.RawMessage `json:"resources"`
		ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
		Prompts           []json.RawMessage `json:"prompts"`
		Completions       bool              `json:"completions"`
		Subscribe         bool              `json:"subscribe"`
		SharedTools       bool              `json:"sharedTools"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	c.Completions, c.Subscribe, c.SharedTools = wire.Completions, wire.Subscribe, wire.SharedTools
	lists := []struct {
		what, key string
		in        []json.RawMessage
		out       *[]CatItem
	}{
		{"resources", "uri", wire.Resources, &c.Resources},
		{"resourceTemplates", "uriTemplate", wire.ResourceTemplates, &c.Templates},
		{"prompts", "name", wire.Prompts, &c.Prompts},
	}
	for _, l := range lists {
		if len(l.in) > MaxCatalogItems {
			return nil, fmt.Errorf("catalog: more than %d %s", MaxCatalogItems, l.what)
		}
		for i, raw := range l.in {
			var m map[string]json.RawMessage
			var key string
			if json.Unmarshal(raw, &m) != nil || json.Unmarshal(m[l.key], &key) != nil || key == "" {
				return nil, fmt.Errorf("catalog: %s[%d] has no %s", l.what, i, l.key)
			}
			*l.out = append(*l.out, CatItem{Key: key, Raw: raw})
		}
	}
	return c, nil
}

// Catalog kinds (Catalog.Items): each has its own keys.
const (
	// CatResource: Catalog.Resources, keyed by URI.
	CatResource = "resource"
	// CatTemplate: Catalog.Templates, keyed by URI template.
	CatTemplate = "resource template"
	// CatPrompt: Catalog.Prompts, keyed by name.
	CatPrompt = "prompt"
)

// Items returns the kind's items of c (CatResource, CatTemplate; any
// other kind: CatPrompt).
func (c *Catalog) Items(kind string) []CatItem {
	switch kind {
	case CatResource:
		return c.Resources
	case CatTemplate:
		return c.Templates
	}
	return c.Prompts
}

// loadCatalog calls the process's Catalog (protocol 3) within timeout.
// A plugin without one has an empty catalog. Errors: the plugin's, or a
// catalog that does not parse.
func (i *instance) loadCatalog(ctx context.Context, timeout time.Duration) (*Catalog, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, err := i.tool.Catalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return ParseCatalog(b)
}
