package checkpoint

// SetScanBounds sets the files a scan looks at and the bytes it keeps
// of one file, and returns what puts them back.
func SetScanBounds(files int, fileBytes int64) func() {
	f, b := scanMaxFiles, scanMaxFileSize
	scanMaxFiles, scanMaxFileSize = files, fileBytes
	return func() { scanMaxFiles, scanMaxFileSize = f, b }
}
