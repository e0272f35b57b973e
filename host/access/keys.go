package access

import (
	"errors"
	"strings"
)

// ErrBlankKeys is TrimKeys' error when keys were given and every one is
// blank: authentication would be off although the operator asked for it.
var ErrBlankKeys = errors.New("every key is empty")

// TrimKeys returns the plain keys given (Config.Keys: --api-key,
// OPENTOOL_API_KEYS) with surrounding spaces trimmed and empty entries
// (e.g. of a trailing comma) dropped; nil for none given. Errors:
// ErrBlankKeys when keys were given and every one is blank, so that
// authentication is never silently off.
func TrimKeys(given []string) ([]string, error) {
	var keys []string
	for _, k := range given {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	if len(given) > 0 && len(keys) == 0 {
		return nil, ErrBlankKeys
	}
	return keys, nil
}
