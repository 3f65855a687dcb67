import CSndFile

extension SoundFile {
    /// The text tags libsndfile reads from the file (`sf_get_string`: a WAV LIST INFO chunk,
    /// AIFF's NAME/AUTH/(c) chunks, FLAC and Ogg comments), by their libsndfile names:
    /// "title", "copyright", "software", "artist", "comment", "date", "album", "license",
    /// "tracknumber", "genre". Tags the file does not have are absent.
    public var strings: [String: String] {
        guard let handle else { return [:] }
        let kinds: [(Int32, String)] = [
            (SF_STR_TITLE, "title"), (SF_STR_COPYRIGHT, "copyright"), (SF_STR_SOFTWARE, "software"),
            (SF_STR_ARTIST, "artist"), (SF_STR_COMMENT, "comment"), (SF_STR_DATE, "date"), (SF_STR_ALBUM, "album"),
            (SF_STR_LICENSE, "license"), (SF_STR_TRACKNUMBER, "tracknumber"), (SF_STR_GENRE, "genre"),
        ].map { (Int32($0.0), $0.1) }
        var strings: [String: String] = [:]
        for (kind, name) in kinds {
            if let text = sf_get_string(handle, kind), text.pointee != 0 { strings[name] = String(cString: text) }
        }
        return strings
    }
}
