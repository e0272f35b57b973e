package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/internal/decl"
)

// secretFlags are the operator's secrets: the only values a plugin's
// policy may hand its plugin ("secrets": {"VAR": "NAME"}).
func secretFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "secret", Usage: "declare secret `NAME=env:VAR` (the host's variable VAR) or NAME=file:PATH (a file, trailing newlines removed), read at each plugin start (repeatable). " +
			"A plugin gets a secret only when its NAME.policy.json names it (\"secrets\": {\"VAR\": \"NAME\"}); OPENTOOL_* variables and the API keys file can never be secrets"},
		&cli.StringFlag{Name: "secrets-file", Usage: "declare the secrets of JSON `FILE` ({\"secrets\": {\"NAME\": {\"env\": \"VAR\"} | {\"file\": \"PATH\"}}}; relative paths from the file's folder), as --secret does"},
	}
}

// secretsConfig is decl.OperatorSecrets of --secret and --secrets-file
// (exit 2 for its errors).
func secretsConfig(c *cli.Context) (map[string]decl.Secret, error) {
	own := []string{c.String("api-keys-file"), os.Getenv("OPENTOOL_API_KEYS_FILE"), c.String("secrets-file")}
	out, err := decl.OperatorSecrets(c.StringSlice("secret"), c.String("secrets-file"), own)
	if err != nil {
		return nil, cli.Exit(err.Error(), 2)
	}
	return out, nil
}
