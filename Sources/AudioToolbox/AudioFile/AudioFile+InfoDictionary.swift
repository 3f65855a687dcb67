import CAudioToolbox
import SoundFile

// kAudioFilePropertyInfoDictionary: a CFDictionary of CFString keys (Apple's kAFInfoDictionary_*)
// and CFString values, which the caller releases. Both kinds of file answer it here, from
// their other properties.

enum AudioFileInfoDictionary {
    /// The size of the value: a CFDictionaryRef.
    static let byteCount = MemoryLayout<UnsafeRawPointer>.size

    /// The entries of `file`'s dictionary: the approximate duration ("1.5", in seconds, as
    /// Apple's decimal number formatter writes it), and the text tags libsndfile reads from the
    /// files it opens (title, artist, ... of a WAV's LIST INFO chunk, AIFF's text chunks).
    static func entries(of file: any AudioFileHandle) throws -> [(key: String, value: String)] {
        var entries: [(key: String, value: String)] = []
        var duration: Float64 = 0
        if try file.getProperty(kAudioFilePropertyEstimatedDuration, into: &duration, capacity: 8) == 8, duration.isFinite {
            entries.append(("approximate duration in seconds", decimal(duration)))
        }
        if let object = file as? AudioFileObject {
            let strings = try object.withState { $0.sound?.strings ?? [:] }
            for (tag, key) in tagKeys { if let value = strings[tag] { entries.append((key, value)) } }
        }
        return entries
    }

    /// libsndfile's tag names and Apple's kAFInfoDictionary_* keys.
    private static let tagKeys: [(tag: String, key: String)] = [
        ("title", "title"), ("artist", "artist"), ("album", "album"), ("comment", "comments"), ("copyright", "copyright"),
        ("software", "encoding application"), ("date", "recorded date"), ("tracknumber", "track number"), ("genre", "genre"),
    ]

    /// Stores a new CFDictionaryRef of `file`'s entries at `buffer` (+1: the caller releases it).
    static func store(of file: any AudioFileHandle, into buffer: UnsafeMutableRawPointer, capacity: Int) throws -> Int {
        guard capacity >= byteCount else {
            throw AudioToolboxError(kAudioFileBadPropertySizeError, "a CFDictionaryRef is \(byteCount) bytes, not \(capacity)")
        }
        let dictionary = try makeDictionary(entries(of: file))
        buffer.storeBytes(of: Unmanaged.passRetained(dictionary).toOpaque(), as: UnsafeMutableRawPointer.self)
        return byteCount
    }

    /// A CFDictionary of CFStrings, with CoreFoundation's callbacks for CF objects.
    static func makeDictionary(_ entries: [(key: String, value: String)]) throws -> CFDictionary {
        let strings = entries.map { (CFString.make($0.key), CFString.make($0.value)) }
        var keys: [UnsafeRawPointer?] = strings.map { UnsafeRawPointer(Unmanaged.passUnretained($0.0).toOpaque()) }
        var values: [UnsafeRawPointer?] = strings.map { UnsafeRawPointer(Unmanaged.passUnretained($0.1).toOpaque()) }
        var keyCallBacks = kCFTypeDictionaryKeyCallBacks
        var valueCallBacks = kCFTypeDictionaryValueCallBacks
        let dictionary = withExtendedLifetime(strings) {
            CFDictionaryCreate(nil, &keys, &values, CFIndex(entries.count), &keyCallBacks, &valueCallBacks)
        }
        guard let dictionary else { throw AudioToolboxError(kAudio_MemFullError, "CFDictionaryCreate failed") }
        return dictionary
    }

    /// `value` with at most three decimals and no trailing zeros ("4", "1.5", "0.023").
    static func decimal(_ value: Double) -> String {
        let thousandths = (value * 1000).rounded()
        guard abs(thousandths) < 1e15 else { return "\(value)" }
        let whole = Int64(thousandths) / 1000, fraction = abs(Int64(thousandths) % 1000)
        var text = "\(thousandths < 0 && whole == 0 ? "-" : "")\(whole)"
        if fraction > 0 {
            var digits = String(fraction)
            digits = String(repeating: "0", count: 3 - digits.count) + digits
            while digits.hasSuffix("0") { digits.removeLast() }
            text += "." + digits
        }
        return text
    }
}
