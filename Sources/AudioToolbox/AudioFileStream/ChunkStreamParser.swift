import CAudioToolbox

/// Where a container's packets lie once its header is read.
enum StreamPacketLayout {
    /// Packets of `bytesPerPacket` back to back from the data start (linear PCM, CBR formats):
    /// delivered with no descriptions.
    case constant(bytesPerPacket: Int)
    /// Each packet's file offset and size (and frames, for formats whose packets vary).
    case table(offsets: [Int64], sizes: [UInt32], frames: [UInt32]?)
}

/// A container of chunks (CAF, RIFF WAVE, AIFF, MPEG-4 boxes), read as it streams: each
/// chunk before the audio data is held whole and handed to the format's syntax; at the data
/// chunk the header is complete and the packets follow, found by their positions.
protocol ChunkSyntax: AnyObject {
    /// Bytes of the file header (checked by `checkFileHeader`).
    var fileHeaderLength: Int { get }
    func checkFileHeader(_ bytes: [UInt8]) throws(AudioToolboxError)
    /// The chunk header at the front of `input`: type, body size (nil: to the end of the
    /// stream) and header length; nil when more bytes are needed.
    func chunkHeader(_ input: StreamBuffer) throws(AudioToolboxError) -> (type: String, size: Int64?, headerLength: Int)?
    /// Whether chunks are padded to an even size.
    var padsToEven: Bool { get }
    /// Whether the chunk holds the audio data.
    func isData(_ type: String) -> Bool
    /// Whether the parser needs this chunk's body (else it is skipped).
    func wants(_ type: String) -> Bool
    func read(_ type: String, _ body: [UInt8]) throws(AudioToolboxError)
    /// Bytes at the start of the data chunk's body to read before the audio (CAF's edit count, SSND's offset).
    var dataPrefixLength: Int { get }
    /// The header is complete at the data chunk: fill the stream's header, return the
    /// properties found and where the packets are. `dataStart` is the first audio byte,
    /// `dataSize` its byte count when known.
    func finish(dataPrefix: [UInt8], dataStart: inout Int64, dataSize: inout Int64?,
                _ header: inout StreamHeader) throws(AudioToolboxError) -> (properties: [AudioFileStreamPropertyID], layout: StreamPacketLayout)
}

final class ChunkStreamParser: StreamFormatParser {
    private let syntax: ChunkSyntax
    private enum State { case fileHeader, chunks, dataPrefix(size: Int64?), data }
    private var state = State.fileHeader
    private var data: PacketDataPhase?
    /// The largest chunk held whole (a movie header of a long file is several MiB).
    static let chunkLimit: Int64 = 64 << 20

    init(_ syntax: ChunkSyntax) { self.syntax = syntax }

    func parse(_ input: inout StreamBuffer, _ stream: AudioFileStreamObject) throws(AudioToolboxError) {
        while !input.isSkipping {
            switch state {
            case .fileHeader:
                guard input.count >= syntax.fileHeaderLength else { return }
                try syntax.checkFileHeader(input.bytes(0, syntax.fileHeaderLength))
                input.consume(syntax.fileHeaderLength)
                state = .chunks
            case .chunks:
                guard let chunk = try syntax.chunkHeader(input) else { return }
                if syntax.isData(chunk.type) {
                    input.consume(chunk.headerLength)
                    state = .dataPrefix(size: chunk.size)
                    continue
                }
                guard let size = chunk.size else {
                    throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a '\(chunk.type)' chunk of no size before the audio data")
                }
                let padded = size + (syntax.padsToEven ? size & 1 : 0)
                guard syntax.wants(chunk.type) else {
                    input.consume(chunk.headerLength)
                    input.skip(padded)
                    continue
                }
                guard size <= Self.chunkLimit else {
                    throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a '\(chunk.type)' chunk of \(size) bytes")
                }
                guard Int64(input.count) >= Int64(chunk.headerLength) + size else { return }
                try syntax.read(chunk.type, input.bytes(chunk.headerLength, Int(size)))
                input.consume(chunk.headerLength + Int(size))
                input.skip(padded - size)
            case .dataPrefix(let size):
                let prefix = syntax.dataPrefixLength
                guard input.count >= prefix else { return }
                var dataStart = input.position + Int64(prefix)
                var dataSize = size.map { $0 - Int64(prefix) }
                if let dataSize, dataSize < 0 { throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a data chunk of \(dataSize) bytes") }
                let found = try syntax.finish(dataPrefix: input.bytes(0, prefix), dataStart: &dataStart, dataSize: &dataSize, &stream.header)
                input.consume(prefix)
                data = try PacketDataPhase(start: dataStart, size: dataSize, layout: found.layout, header: &stream.header)
                state = .data
                stream.headerComplete(found.properties)
            case .data:
                data?.parse(&input, stream)
                return
            }
        }
    }

    func seek(toPacket packet: Int64, _ stream: AudioFileStreamObject) throws(AudioToolboxError) -> (offset: Int64, estimated: Bool) {
        guard let data, let offset = data.offset(ofPacket: packet) else {
            throw AudioToolboxError(kAudioFileStreamError_InvalidPacketOffset, "packet \(packet) is not in the stream")
        }
        self.data?.next = Int(clamping: packet)
        return (offset, false)
    }

    func discontinuity(_ input: inout StreamBuffer, _ stream: AudioFileStreamObject) {}
}

/// The packets of a container whose header says where they are: delivered as their bytes
/// arrive, each whole; bytes between packets (other chunks, gaps in 'mdat') are skipped.
struct PacketDataPhase {
    let start: Int64
    let end: Int64?
    let layout: StreamPacketLayout
    /// The next packet of a table.
    var next = 0
    /// The largest packet held for delivery.
    static let packetLimit: UInt32 = 16 << 20

    init(start: Int64, size: Int64?, layout: StreamPacketLayout, header: inout StreamHeader) throws(AudioToolboxError) {
        self.start = start
        self.end = size.map { start + $0 }
        self.layout = layout
        header.dataOffset = start
        switch layout {
        case .constant(let bytesPerPacket):
            guard bytesPerPacket > 0 else { throw AudioToolboxError(kAudioFileStreamError_UnsupportedDataFormat, "packets of 0 bytes") }
        case .table(let offsets, let sizes, let frames):
            guard offsets.count == sizes.count, frames.map({ $0.count == sizes.count }) ?? true else {
                throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a packet table that contradicts itself")
            }
            var previousEnd = Int64.min
            for (offset, size) in zip(offsets, sizes) {
                guard offset >= start, offset >= previousEnd, size > 0, size <= Self.packetLimit else {
                    throw AudioToolboxError(kAudioFileStreamError_InvalidFile, "a packet of \(size) bytes at \(offset)")
                }
                previousEnd = offset + Int64(size)
            }
            header.packetOffsets = offsets.map { $0 - start }
            header.packetSizes = sizes
            header.maximumPacketSize = sizes.max() ?? 0
            header.audioDataPacketCount = UInt64(offsets.count)
            header.audioDataByteCount = header.audioDataByteCount ?? UInt64(sizes.reduce(Int64(0)) { $0 + Int64($1) })
            if let frames {
                var total: Int64 = 0
                header.packetFrameStarts = frames.map { count -> Int64 in
                    defer { total += Int64(count) }
                    return total
                }
            }
        }
    }

    /// The file offset of a packet's first byte.
    func offset(ofPacket packet: Int64) -> Int64? {
        switch layout {
        case .constant(let bytesPerPacket):
            guard packet >= 0, packet <= (Int64.max - start) / Int64(bytesPerPacket) else { return nil }
            let offset = start + packet * Int64(bytesPerPacket)
            return end.map { offset <= $0 } ?? true ? offset : nil
        case .table(let offsets, _, _):
            guard packet >= 0, packet <= Int64(offsets.count) else { return nil }
            return packet == Int64(offsets.count) ? (end ?? offsets.last ?? start) : offsets[Int(packet)]
        }
    }

    mutating func parse(_ input: inout StreamBuffer, _ stream: AudioFileStreamObject) {
        while !input.isSkipping, input.count > 0 {
            let position = input.position
            if position < start {
                input.skip(start - position)
                continue
            }
            if let end, position >= end {
                input.skip(Int64(input.count))  // chunks after the audio data
                return
            }
            let available = Int(min(Int64(input.count), (end ?? Int64.max) - position))
            switch layout {
            case .constant(let bytesPerPacket):
                let misalignment = Int((position - start) % Int64(bytesPerPacket))
                if misalignment != 0 {
                    input.skip(Int64(bytesPerPacket - misalignment))
                    continue
                }
                let count = available / bytesPerPacket
                guard count > 0 else { return }
                var none: [AudioStreamPacketDescription] = []
                input.withUnsafeBytes { stream.deliver(UnsafeRawBufferPointer(rebasing: $0[..<(count * bytesPerPacket)]), count: count, descriptions: &none) }
                input.consume(count * bytesPerPacket)
            case .table(let offsets, let sizes, let frames):
                guard next < offsets.count else {
                    input.skip(Int64(input.count))
                    return
                }
                if offsets[next] < position {
                    // After a discontinuity: the first packet that starts at or after here.
                    let candidate = lastIndex(in: offsets, notAbove: position)
                    next = offsets[candidate] >= position ? candidate : candidate + 1
                    continue
                }
                if offsets[next] > position {
                    input.skip(offsets[next] - position)
                    continue
                }
                var descriptions: [AudioStreamPacketDescription] = []
                var used = 0
                while next < offsets.count {
                    let relative = Int(offsets[next] - position)
                    guard relative + Int(sizes[next]) <= available else { break }
                    descriptions.append(AudioStreamPacketDescription(mStartOffset: Int64(relative),
                                                                     mVariableFramesInPacket: frames?[next] ?? 0,
                                                                     mDataByteSize: sizes[next]))
                    used = relative + Int(sizes[next])
                    next += 1
                }
                guard !descriptions.isEmpty else { return }
                input.withUnsafeBytes { stream.deliver(UnsafeRawBufferPointer(rebasing: $0[..<used]), count: descriptions.count, descriptions: &descriptions) }
                input.consume(used)
            }
        }
    }
}
