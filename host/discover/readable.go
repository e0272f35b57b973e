package discover

import (
	"errors"
	"io/fs"
	"os"
)

// unreadable says why the host cannot read the plugin file at path,
// which it must to copy it into its state folder and run the copy: "not
// readable: permission denied" (a mode without the read bit for the
// host's user, or a host without CAP_DAC_OVERRIDE), "" when the file
// opens. path must be a regular file (opening a named pipe would block).
func unreadable(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "not readable: " + pathErrText(err)
	}
	f.Close()
	return ""
}

// statReason says why os.Stat of a file the folder lists failed: "a
// symbolic link to a missing file" for a dangling link, else "not
// readable: " and the system's words (without the path, which the log
// line and the listing give as the file's name).
func statReason(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "a symbolic link to a missing file"
	}
	return "not readable: " + pathErrText(err)
}

// pathErrText is err's text without the operation and path of an
// *fs.PathError ("permission denied").
func pathErrText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
