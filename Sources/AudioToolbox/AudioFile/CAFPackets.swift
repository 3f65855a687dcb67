import CAudioToolbox
import Glibc
import QueueCore
import SoundFile

/// Where a file's packets are and how many frames each holds.
struct PacketIndex: Sendable {
    /// One packet: its bytes in the file and its frames.
    struct Entry: Sendable, Equatable {
        var offset: Int64
        var byteCount: UInt32
        var frameCount: UInt32
    }

    var entries: [Entry] = []
    /// Frames per packet when constant, 0 when each entry says.
    var framesPerPacket: UInt32
    var primingFrames: Int32 = 0
    var remainderFrames: Int32 = 0
    /// Sum of the entries' byte counts.
    private(set) var byteCount: Int64 = 0
    /// Sum of the entries' frame counts.
    private(set) var frameCount: Int64 = 0
    private(set) var maximumPacketSize: UInt32 = 0

    init(framesPerPacket: UInt32) {
        self.framesPerPacket = framesPerPacket
    }

    mutating func append(_ entry: Entry) {
        entries.append(entry)
        byteCount += Int64(entry.byteCount)
        frameCount += Int64(entry.frameCount)
        maximumPacketSize = max(maximumPacketSize, entry.byteCount)
    }

    /// Frames of audio: all the packets' frames less priming and remainder.
    var validFrameCount: Int64 { max(frameCount - Int64(primingFrames) - Int64(remainderFrames), 0) }
}

/// CAF files of compressed packets (Apple's Core Audio Format specification): the 'desc',
/// 'kuki', 'chan', 'pakt' and 'data' chunks, read and written here; linear PCM CAF stays with
/// libsndfile.
enum CAFPackets {
    /// What a CAF file of packets holds.
    struct Contents {
        var format: AudioStreamBasicDescription
        var cookie: [UInt8]?
        var channelLayout: ChannelLayoutValue?
        var index: PacketIndex
        /// The first byte of the audio data (after the data chunk's edit count).
        var dataOffset: Int64
    }

    /// Whether a CAF header at the start of `fd` describes packets this type reads: a 'desc'
    /// whose format is not linear PCM, µ-law or A-law.
    static func holdsPackets(fd: Int32) -> Bool {
        guard let header = ChunkReader(fd: fd).bytes(at: 8, count: 24), header.starts(with: Array("desc".utf8)) else { return false }
        let formatID = bigEndian(header, at: 20, as: UInt32.self)
        return ![kAudioFormatLinearPCM, kAudioFormatULaw, kAudioFormatALaw].contains(formatID)
    }

    /// Reads the chunks of a CAF file of packets.
    /// - Throws: 'dta?' for chunks that contradict each other or lie outside the file,
    ///   'fmt?' for a data format no packet reader knows.
    static func read(fd: Int32, fileByteCount: Int64) throws(AudioToolboxError) -> Contents {
        let reader = ChunkReader(fd: fd)
        func damaged(_ reason: String) -> AudioToolboxError {
            AudioToolboxError(kAudioFileInvalidFileError, "damaged CAF file: \(reason)")
        }
        guard let fileHeader = reader.bytes(at: 0, count: 8), fileHeader.starts(with: Array("caff".utf8)),
              bigEndian(fileHeader, at: 4, as: UInt16.self) == 1
        else { throw damaged("no CAF version 1 header") }
        var format: AudioStreamBasicDescription?
        var cookie: [UInt8]?
        var channelLayout: ChannelLayoutValue?
        var pakt: (offset: Int64, size: Int64)?
        var data: (offset: Int64, size: Int64)?
        var offset: Int64 = 8
        for _ in 0..<HeaderCheck.chunkLimit where offset + 12 <= fileByteCount {
            guard let header = reader.bytes(at: offset, count: 12) else { break }
            let type = String(decoding: header[0..<4], as: UTF8.self)
            var size = Int64(bitPattern: bigEndian(header, at: 4, as: UInt64.self))
            let body = offset + 12
            if size == -1, type == "data" { size = fileByteCount - body }
            guard size >= 0, size <= fileByteCount - body else { throw damaged("the '\(type)' chunk runs past the end of the file") }
            switch type {
            case "desc":
                guard size >= 32, let bytes = reader.bytes(at: body, count: 32) else { throw damaged("a short 'desc' chunk") }
                format = AudioStreamBasicDescription(
                    mSampleRate: Double(bitPattern: bigEndian(bytes, at: 0, as: UInt64.self)),
                    mFormatID: bigEndian(bytes, at: 8, as: UInt32.self), mFormatFlags: bigEndian(bytes, at: 12, as: UInt32.self),
                    mBytesPerPacket: bigEndian(bytes, at: 16, as: UInt32.self), mFramesPerPacket: bigEndian(bytes, at: 20, as: UInt32.self),
                    mBytesPerFrame: 0, mChannelsPerFrame: bigEndian(bytes, at: 24, as: UInt32.self),
                    mBitsPerChannel: bigEndian(bytes, at: 28, as: UInt32.self), mReserved: 0)
            case "kuki":
                guard size <= 1 << 20, let bytes = reader.bytes(at: body, count: Int(size)) else { throw damaged("a 'kuki' chunk of \(size) bytes") }
                cookie = bytes
            case "chan":
                guard size >= 12, size <= 12 + 20 * 1024, let bytes = reader.bytes(at: body, count: Int(size)) else {
                    throw damaged("a 'chan' chunk of \(size) bytes")
                }
                channelLayout = try? layout(fromBigEndian: bytes)
            case "pakt": pakt = (body, size)
            case "data":
                guard size >= 4 else { throw damaged("a 'data' chunk without its edit count") }
                data = (body + 4, size - 4)
            default: break
            }
            offset = body + size
        }
        guard var format else { throw damaged("no 'desc' chunk") }
        guard let data else { throw damaged("no 'data' chunk") }
        guard format.mSampleRate.isFinite, format.mSampleRate > 0, format.mSampleRate <= 1e7,
              (1...1024).contains(format.mChannelsPerFrame)
        else { throw damaged("\(format.mChannelsPerFrame) channels at \(format.mSampleRate) Hz") }
        guard let compressed = PacketFormat(formatID: format.mFormatID) else {
            throw AudioToolboxError(kAudioFileUnsupportedDataFormatError,
                                    "CAF data format \(fourCharacterCode(format.mFormatID)) has no packet reader")
        }
        var index = PacketIndex(framesPerPacket: format.mFramesPerPacket)
        if format.mBytesPerPacket > 0, format.mFramesPerPacket > 0 {
            // Constant packets need no table.
            let count = data.size / Int64(format.mBytesPerPacket)
            guard count <= MediaLimits.packetCount else { throw damaged("\(count) packets") }
            index.entries.reserveCapacity(Int(count))
            for packet in 0..<count {
                index.append(.init(offset: data.offset + packet * Int64(format.mBytesPerPacket),
                                   byteCount: format.mBytesPerPacket, frameCount: format.mFramesPerPacket))
            }
            if let pakt, let table = reader.bytes(at: pakt.offset, count: 24) {
                index.primingFrames = max(Int32(bitPattern: bigEndian(table, at: 16, as: UInt32.self)), 0)
                index.remainderFrames = max(Int32(bitPattern: bigEndian(table, at: 20, as: UInt32.self)), 0)
            }
        } else {
            guard let pakt else { throw damaged("packets of variable size and no 'pakt' chunk") }
            try readPacketTable(reader, pakt, format: format, data: data, into: &index)
        }
        if format.mFramesPerPacket == 0, compressed.standardFramesPerPacket > 0 { format.mFramesPerPacket = compressed.standardFramesPerPacket }
        return Contents(format: format, cookie: cookie, channelLayout: channelLayout, index: index, dataOffset: data.offset)
    }

    /// Reads a 'pakt' chunk: a header (packets, valid frames, priming, remainder) and a
    /// variable-length integer per packet for its size and/or its frames.
    private static func readPacketTable(_ reader: ChunkReader, _ pakt: (offset: Int64, size: Int64), format: AudioStreamBasicDescription,
                                        data: (offset: Int64, size: Int64), into index: inout PacketIndex) throws(AudioToolboxError) {
        func damaged(_ reason: String) -> AudioToolboxError {
            AudioToolboxError(kAudioFileInvalidFileError, "damaged CAF packet table: \(reason)")
        }
        guard pakt.size >= 24, pakt.size <= 1 << 31, let table = reader.bytes(at: pakt.offset, count: Int(pakt.size)) else {
            throw damaged("\(pakt.size) bytes")
        }
        let decoded = try CAFPacketTable(table, format: format, damaged: damaged)
        index.entries.reserveCapacity(decoded.sizes.count)
        var position = data.offset
        for (packet, size) in decoded.sizes.enumerated() {
            let frames = decoded.frames?[packet] ?? format.mFramesPerPacket
            guard Int64(size) <= data.offset + data.size - position else {
                throw damaged("packet \(index.entries.count) lies past the end of the data")
            }
            index.append(.init(offset: position, byteCount: size, frameCount: frames))
            position += Int64(size)
        }
        let (priming, remainder) = (decoded.info.mPrimingFrames, decoded.info.mRemainderFrames)
        index.primingFrames = priming
        index.remainderFrames = remainder
        guard Int64(priming) + Int64(remainder) <= index.frameCount else {
            throw damaged("\(priming) priming and \(remainder) remainder frames in \(index.frameCount)")
        }
    }

    /// An AudioChannelLayout from a 'chan' chunk's big-endian fields.
    private static func layout(fromBigEndian bytes: [UInt8]) throws -> ChannelLayoutValue {
        var native = [UInt8](repeating: 0, count: bytes.count)
        // Every field of the layout and its descriptions is 32 bits.
        for word in stride(from: 0, to: bytes.count - 3, by: 4) {
            for byte in 0..<4 { native[word + byte] = bytes[word + 3 - byte] }
        }
        return try native.withUnsafeBytes { try ChannelLayoutValue(bytes: $0) }
    }

    static func bigEndian<Value: FixedWidthInteger>(_ bytes: [UInt8], at offset: Int, as _: Value.Type) -> Value {
        bytes[offset..<offset + MemoryLayout<Value>.size].reduce(Value(0)) { $0 << 8 | Value($1) }
    }
}

/// Limits that keep a hostile header from asking for unbounded memory.
enum MediaLimits {
    /// 2^27 packets: 31 hours of AAC at 48 kHz.
    static let packetCount: Int64 = 1 << 27
}

/// Reads byte ranges of an open file (and writes them, for the writers of packet files).
struct ChunkReader {
    let fd: Int32

    /// Writes all of `bytes` at `offset` (retrying interrupted and short writes).
    /// - Throws: `SoundFileError` with the errno (a full disk: ENOSPC, dskFulErr).
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        while done < bytes.count {
            let written = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw SoundFileError.system(written < 0 ? errno : ENOSPC, "writing the file") }
            done += written
        }
    }

    func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { return nil }
            done += read
        }
        return bytes
    }
}

// MARK: - Writing

/// Writes a CAF file of packets: the header when the first packet comes (or at close), the
/// packets as they come into a 'data' chunk of unknown size, and at close the data size, the
/// packet table after the data, and the cookie and channel layout in the room reserved for
/// them before it (or after the data when they outgrew it).
struct CAFPacketWriter {
    let fd: Int32
    /// Where the room for 'chan' and 'kuki' starts, and its size (a 'free' chunk until close).
    private var reservedOffset: Int64 = 0
    private var reservedSize: Int64 = 0
    /// Where the 'data' chunk header starts; 0 until the header is written.
    private(set) var dataChunkOffset: Int64 = 0
    /// The end of the data written so far.
    private(set) var dataEnd: Int64 = 0

    init(fd: Int32) {
        self.fd = fd
    }

    var hasHeader: Bool { dataChunkOffset > 0 }

    /// Writes the file header, 'desc', the reserved room and an open 'data' chunk.
    mutating func writeHeader(format: AudioStreamBasicDescription, cookie: [UInt8]?, channelLayout: ChannelLayoutValue?) throws {
        var header = Array("caff".utf8) + [0, 1, 0, 0]
        var desc = bigEndianBytes(format.mSampleRate.bitPattern)
        for field in [format.mFormatID, format.mFormatFlags, format.mBytesPerPacket, format.mFramesPerPacket,
                      format.mChannelsPerFrame, format.mBitsPerChannel] { desc += bigEndianBytes(field) }
        header += chunk("desc", desc)
        reservedOffset = Int64(header.count)
        let metadata = metadataChunks(cookie: cookie, channelLayout: channelLayout)
        // Room for a cookie and a layout set later (the guide's recorder sets the cookie again
        // at the end): what is known now plus 512 bytes.
        reservedSize = Int64(metadata.count) + 512
        header += metadata + chunk("free", [UInt8](repeating: 0, count: 512 - 12))
        dataChunkOffset = Int64(header.count)
        header += Array("data".utf8) + bigEndianBytes(UInt64.max) + [0, 0, 0, 0]
        try write(header, at: 0)
        dataEnd = Int64(header.count)
    }

    /// Appends packet bytes to the data chunk.
    /// - Returns: where they start in the file.
    mutating func append(_ bytes: UnsafeRawBufferPointer) throws -> Int64 {
        let start = dataEnd
        try write(bytes, at: start)
        dataEnd += Int64(bytes.count)
        return start
    }

    /// Finishes the file: data size, packet table, cookie and layout.
    mutating func finish(format: AudioStreamBasicDescription, index: PacketIndex, cookie: [UInt8]?,
                         channelLayout: ChannelLayoutValue?) throws {
        if !hasHeader { try writeHeader(format: format, cookie: cookie, channelLayout: channelLayout) }
        let dataSize = UInt64(dataEnd - dataChunkOffset - 12)
        try write(bigEndianBytes(dataSize), at: dataChunkOffset + 4)
        var trailer: [UInt8] = []
        let metadata = metadataChunks(cookie: cookie, channelLayout: channelLayout)
        let room = reservedSize - Int64(metadata.count)
        if room == 0 || room >= 12 {
            try write(metadata + (room > 0 ? chunk("free", [UInt8](repeating: 0, count: Int(room) - 12)) : []), at: reservedOffset)
        } else {
            try write(chunk("free", [UInt8](repeating: 0, count: Int(reservedSize) - 12)), at: reservedOffset)
            trailer += metadata
        }
        // A packet table whenever packets vary, and for priming and remainder otherwise.
        if format.mBytesPerPacket == 0 || format.mFramesPerPacket == 0 || index.primingFrames != 0 || index.remainderFrames != 0 {
            var table = bigEndianBytes(UInt64(index.entries.count)) + bigEndianBytes(UInt64(index.validFrameCount))
                + bigEndianBytes(UInt32(bitPattern: index.primingFrames)) + bigEndianBytes(UInt32(bitPattern: index.remainderFrames))
            if format.mBytesPerPacket == 0 || format.mFramesPerPacket == 0 {
                table.reserveCapacity(table.count + index.entries.count * 3)
                for entry in index.entries {
                    if format.mBytesPerPacket == 0 { appendVarint(entry.byteCount, to: &table) }
                    if format.mFramesPerPacket == 0 { appendVarint(entry.frameCount, to: &table) }
                }
            }
            trailer += chunk("pakt", table)
        }
        if !trailer.isEmpty { try write(trailer, at: dataEnd) }
    }

    private func metadataChunks(cookie: [UInt8]?, channelLayout: ChannelLayoutValue?) -> [UInt8] {
        var bytes: [UInt8] = []
        if let channelLayout {
            var native = [UInt8](repeating: 0, count: channelLayout.byteCount)
            native.withUnsafeMutableBytes { channelLayout.store(into: $0.baseAddress!) }
            var big = [UInt8](repeating: 0, count: native.count)
            for word in stride(from: 0, to: native.count - 3, by: 4) {
                for byte in 0..<4 { big[word + byte] = native[word + 3 - byte] }
            }
            bytes += chunk("chan", big)
        }
        if let cookie { bytes += chunk("kuki", cookie) }
        return bytes
    }

    private func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
        Array(type.utf8) + bigEndianBytes(UInt64(body.count)) + body
    }

    private func bigEndianBytes<Value: FixedWidthInteger>(_ value: Value) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    private func appendVarint(_ value: UInt32, to bytes: inout [UInt8]) {
        var groups: [UInt8] = [UInt8(value & 0x7F)]
        var rest = value >> 7
        while rest > 0 {
            groups.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes += groups.reversed()
    }

    private func write(_ bytes: [UInt8], at offset: Int64) throws {
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        try ChunkReader.writeAll(fd, bytes, at: offset)
    }
}
