package memory

// BlobCount is the number of distinct capture contents st holds.
func BlobCount(st *Store) int { return st.blobCount() }
