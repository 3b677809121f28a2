// Package jsonstr writes JSON strings into a caller's buffer, byte for
// byte as encoding/json's Marshal writes them (HTML characters, U+2028 and
// U+2029 escaped, invalid UTF-8 replaced), without allocating beyond
// growing the buffer. The protocol encoders and the delegation tools use it
// on their hot paths; a fuzz test keeps it equal to encoding/json.
package jsonstr
