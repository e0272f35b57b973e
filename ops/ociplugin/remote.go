package ociplugin

import (
	"fmt"
	"io"
	"strings"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// RemoteOptions say how to reach a registry.
type RemoteOptions struct {
	// PlainHTTP talks plain HTTP (a registry on loopback); default HTTPS.
	PlainHTTP bool
	// Username and Password log in; without Username the credentials of
	// the Docker config file ($DOCKER_CONFIG or ~/.docker/config.json)
	// are used, else none (anonymous).
	Username, Password string
	// Warn receives one line when the Docker config cannot be read (the
	// pull or push then goes anonymous); nil: not said.
	Warn io.Writer
}

// Repository returns the remote repository of ref
// ("REGISTRY/REPOSITORY[:TAG|@DIGEST]"; no tag or digest is "latest")
// with o's transport and credentials. Errors: ref is not a reference.
func Repository(ref string, o RemoteOptions) (*remote.Repository, error) {
	repo, err := remote.NewRepository(ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %v (want REGISTRY/REPOSITORY:TAG)", ref, err)
	}
	if repo.Reference.Reference == "" {
		repo.Reference.Reference = "latest"
	}
	repo.PlainHTTP = o.PlainHTTP
	client := &auth.Client{Client: auth.DefaultClient.Client, Cache: auth.NewCache()}
	client.SetUserAgent("opentool-host")
	if o.Username != "" {
		client.Credential = auth.StaticCredential(repo.Reference.Registry, auth.Credential{Username: o.Username, Password: o.Password})
	} else if store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{}); err != nil {
		if o.Warn != nil {
			fmt.Fprintf(o.Warn, "opentool-host: Docker credentials not read, going anonymous: %v\n", err)
		}
	} else {
		client.Credential = credentials.Credential(store)
	}
	repo.Client = client
	return repo, nil
}

// Describe says what files are, for people: "opentool-plugin-x (19.6
// MiB, linux/amd64), x.policy.json (112 B)"; platform is the binary's.
func Describe(files []File, platform string) string {
	var out []string
	for _, f := range files {
		what := humanBytes(f.Size)
		if f.Kind == KindBinary {
			what += ", " + platform
		}
		out = append(out, fmt.Sprintf("%s (%s)", f.Name, what))
	}
	return strings.Join(out, ", ")
}

// humanBytes is n as "112 B", "4.0 KiB" or "19.6 MiB".
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
