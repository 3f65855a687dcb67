import CAudioToolbox
import Glibc

/// jaq's own checks of the headers libsndfile 1.2 trusts too far, made before libsndfile
/// sees the file. Each rule names the overflow it prevents:
///
/// - AIFF/AIFC and CAF channel layouts (CHAN, chan) whose layout tag names fewer channels than
///   COMM/desc: libsndfile keeps a channel map of the smaller size and copies the larger one
///   out of it (heap read overflow in `sf_command(SFC_GET_CHANNEL_MAP_INFO)`).
/// - Channel layout chunks whose size is not that of their descriptions (12 + 20 per
///   description): libsndfile skips by the size and, read-write, corrupts its heap.
/// - AIFF SSND chunks whose offset puts the audio data outside the chunk or the file: opened
///   read-write, libsndfile's header buffer is overrun (heap overflow in the virtual-I/O reads
///   and writes).
/// - For read-write, any AIFF SSND offset but 0: libsndfile rewrites the header as if it were
///   0 and corrupts its heap ("free(): invalid size") when it is not. Such files open read-only.
///
/// Files that fail are damaged: kAudioFileInvalidFileError ('dta?'); read-write opens of files
/// libsndfile cannot rewrite safely: kAudioFileOperationNotSupportedError ('op??'). Files that
/// cannot be read here are left to the open that follows, which reports why.
enum HeaderCheck {
    /// The most chunks a header walk looks at before giving up (a file of empty chunks).
    static let chunkLimit = 4096

    static func check(path: String, forWriting: Bool) throws(AudioToolboxError) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return }
        defer { Glibc.close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return }
        let file = Reader(fd: fd, size: Int64(status.st_size))
        switch file.tag(at: 0) {
        case "FORM": try checkAIFF(file, forWriting: forWriting)
        case "caff": try checkCAF(file)
        default: return
        }
    }

    private static func damaged(_ reason: String) -> AudioToolboxError {
        AudioToolboxError(kAudioFileInvalidFileError, "damaged header: \(reason)")
    }

    private static func checkAIFF(_ file: Reader, forWriting: Bool) throws(AudioToolboxError) {
        guard let form = file.tag(at: 8), form == "AIFF" || form == "AIFC" else { return }
        var channels: UInt32?
        var layoutChannels: UInt32?
        try forEachChunk(of: file, from: 12, sizeField: UInt32.self, padded: true) { (id, data, size) throws(AudioToolboxError) in
            switch id {
            case "COMM": channels = file.bigEndian(UInt16.self, at: data).map(UInt32.init)
            case "CHAN": layoutChannels = try layoutChunk(file, at: data, size: size, "CHAN")
            case "SSND":
                guard let dataOffset = file.bigEndian(UInt32.self, at: data) else { break }
                let start = data + 8 + Int64(dataOffset)
                guard UInt64(dataOffset) + 8 <= size, start <= file.size else {
                    throw damaged("the SSND chunk's data offset \(dataOffset) is outside its \(size)-byte chunk")
                }
                guard !forWriting || dataOffset == 0 else {
                    throw AudioToolboxError(kAudioFileOperationNotSupportedError,
                                            "AIFF files whose SSND data offset is not 0 (here \(dataOffset)) can be opened for reading only")
                }
            default: break
            }
        }
        try requireAgreement(channels, layoutChannels, "COMM", "CHAN")
    }

    private static func checkCAF(_ file: Reader) throws(AudioToolboxError) {
        var channels: UInt32?
        var layoutChannels: UInt32?
        try forEachChunk(of: file, from: 8, sizeField: UInt64.self, padded: false) { (id, data, size) throws(AudioToolboxError) in
            switch id {
            case "desc": channels = file.bigEndian(UInt32.self, at: data + 24)
            case "chan": layoutChannels = try layoutChunk(file, at: data, size: size, "chan")
            default: break
            }
        }
        try requireAgreement(channels, layoutChannels, "desc", "chan")
    }

    /// Calls `body` with each chunk's ID, data offset and size, from the chunk header at `start`
    /// until the file ends or `chunkLimit` chunks: the one chunk walk of AIFF (32-bit sizes,
    /// chunks padded to an even length) and CAF (64-bit sizes, no padding).
    private static func forEachChunk<Size: FixedWidthInteger & UnsignedInteger>(
        of file: Reader, from start: Int64, sizeField: Size.Type, padded: Bool,
        _ body: (_ id: String, _ data: Int64, _ size: UInt64) throws(AudioToolboxError) -> Void
    ) throws(AudioToolboxError) {
        let headerSize = 4 + Int64(MemoryLayout<Size>.size)
        var offset = start
        for _ in 0..<chunkLimit {
            guard offset + headerSize <= file.size, let id = file.tag(at: offset), let size = file.bigEndian(Size.self, at: offset + 4) else { return }
            let data = offset + headerSize
            try body(id, data, UInt64(size))
            // A chunk that runs past the end (CAF's data chunk of size -1 runs to the end of the file) is the last.
            guard UInt64(size) < UInt64(file.size) else { return }
            offset = data + Int64(size) + (padded ? Int64(size & 1) : 0)
        }
    }

    /// Checks a channel layout chunk's size; returns the channel count its tag names.
    private static func layoutChunk(_ file: Reader, at data: Int64, size: UInt64, _ name: String) throws(AudioToolboxError) -> UInt32? {
        guard let tag = file.bigEndian(UInt32.self, at: data), let descriptions = file.bigEndian(UInt32.self, at: data + 8),
              size == 12 + 20 * UInt64(descriptions)
        else { throw damaged("the \(name) chunk's size \(size) does not fit its channel descriptions") }
        return channelCount(ofLayoutTag: tag)
    }

    /// The channel count a layout tag names (its low 16 bits), nil for the two tags that
    /// carry no count (channel descriptions, a bitmap).
    private static func channelCount(ofLayoutTag tag: UInt32) -> UInt32? {
        tag == 0 || tag == 0x1_0000 ? nil : tag & 0xFFFF
    }

    private static func requireAgreement(_ channels: UInt32?, _ layoutChannels: UInt32?, _ format: String, _ layout: String) throws(AudioToolboxError) {
        guard let channels, let layoutChannels, layoutChannels != channels else { return }
        throw damaged("the \(layout) chunk's layout is for \(layoutChannels) channels, \(format) says \(channels)")
    }

    /// Reads fields at absolute offsets of an open file.
    private struct Reader {
        let fd: Int32
        let size: Int64

        func bytes(at offset: Int64, count: Int) -> [UInt8]? {
            guard offset >= 0, offset + Int64(count) <= size else { return nil }
            var bytes = [UInt8](repeating: 0, count: count)
            let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, count, off_t(offset)) }
            return read == count ? bytes : nil
        }

        func tag(at offset: Int64) -> String? {
            bytes(at: offset, count: 4).map { String(decoding: $0, as: UTF8.self) }
        }

        func bigEndian<Value: FixedWidthInteger>(_: Value.Type, at offset: Int64) -> Value? {
            bytes(at: offset, count: MemoryLayout<Value>.size).map { $0.reduce(Value(0)) { $0 << 8 | Value($1) } }
        }
    }
}
