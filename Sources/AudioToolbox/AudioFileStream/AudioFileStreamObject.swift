import CAudioToolbox
import QueueCore

/// What a stream's header said: the values of the properties, set as they are found.
struct StreamHeader {
    var fileFormat: AudioFileTypeID?
    var dataFormat: AudioStreamBasicDescription?
    var magicCookie: [UInt8]?
    var audioDataByteCount: UInt64?
    var audioDataPacketCount: UInt64?
    var dataOffset: Int64?
    var channelLayout: ChannelLayoutValue?
    var packetTable: AudioFilePacketTableInfo?
    var bitRate: UInt32?
    var maximumPacketSize: UInt32?
    var packetSizeUpperBound: UInt32?
    var ready = false
    /// Byte offsets (from the data offset) of packets 0..<n, where known: the whole table for
    /// CAF and MPEG-4, those parsed so far for ADTS and MP3.
    var packetOffsets: [Int64] = []
    /// The packets' sizes, parallel to `packetOffsets` (for ByteToPacket).
    var packetSizes: [UInt32] = []
    /// The first frame of each packet when packets hold different frame counts.
    var packetFrameStarts: [Int64]?
    /// Packets delivered and their bytes (for the averages before counts are known).
    var deliveredPackets: Int64 = 0
    var deliveredBytes: Int64 = 0
    var largestDelivered: UInt32 = 0
}

/// One format's parser: consumes the bytes a stream buffer holds, reports what it finds to
/// the stream, and leaves a partial header or packet for the next bytes.
protocol StreamFormatParser: AnyObject {
    func parse(_ input: inout StreamBuffer, _ stream: AudioFileStreamObject) throws(AudioToolboxError)
    /// The file offset of packet `packet`'s first byte and whether it is an estimate; the
    /// parser expects the bytes from there next.
    func seek(toPacket packet: Int64, _ stream: AudioFileStreamObject) throws(AudioToolboxError) -> (offset: Int64, estimated: Bool)
    /// Bytes that do not follow the previous ones arrive at `input.position`.
    func discontinuity(_ input: inout StreamBuffer, _ stream: AudioFileStreamObject)
}

/// An AudioFileStreamID: the callbacks, the bytes held and the format's parser.
///
/// Thread safety: as Apple's, one caller at a time; the callbacks run on the caller's thread
/// inside ParseBytes. A callback calling ParseBytes or Seek on the same stream gets 'nope'.
final class AudioFileStreamObject {
    let clientData: UnsafeMutableRawPointer?
    let listener: AudioFileStream_PropertyListenerProc
    let packetsProc: AudioFileStream_PacketsProc
    let typeHint: AudioFileTypeID
    var header = StreamHeader()
    private var input = StreamBuffer()
    private var parser: StreamFormatParser?
    private var parsing = false
    /// The first result a hostile stream got: every later parse returns it.
    private var failure: AudioToolboxError?

    var ref: AudioFileStreamID { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    init(clientData: UnsafeMutableRawPointer?, listener: @escaping AudioFileStream_PropertyListenerProc,
         packetsProc: @escaping AudioFileStream_PacketsProc, typeHint: AudioFileTypeID) {
        self.clientData = clientData
        self.listener = listener
        self.packetsProc = packetsProc
        self.typeHint = typeHint
    }

    // MARK: Parsing

    func parse(_ bytes: UnsafeRawBufferPointer, discontinuity: Bool) throws(AudioToolboxError) {
        guard !parsing else { throw AudioToolboxError(kAudioFileStreamError_IllegalOperation, "ParseBytes called from a callback of the same stream") }
        if let failure { throw failure }
        parsing = true
        defer { parsing = false }
        // A discontinuity drops the partial packet held. Before the header is complete, and
        // before the first packet after it (AudioStreamer passes the flag from its listener's
        // ReadyToProducePackets until packets arrive), nothing was skipped: the bytes continue.
        if discontinuity, header.ready, header.deliveredPackets > 0, let parser {
            input.reset(to: input.position + Int64(input.count))
            parser.discontinuity(&input, self)
        }
        input.append(bytes)
        do {
            if parser == nil {
                guard let detected = try StreamSniffer.parser(for: input, hint: typeHint) else { return }
                parser = detected
            }
            try parser?.parse(&input, self)
        } catch {
            failure = error
            throw error
        }
    }

    func seek(toPacket packet: Int64) throws(AudioToolboxError) -> (offset: Int64, estimated: Bool) {
        guard !parsing else { throw AudioToolboxError(kAudioFileStreamError_IllegalOperation, "Seek called from a callback of the same stream") }
        guard header.ready, let parser, let dataOffset = header.dataOffset else {
            throw AudioToolboxError(kAudioFileStreamError_DataUnavailable, "the header has not been parsed yet")
        }
        guard packet >= 0, header.audioDataPacketCount.map({ UInt64(packet) <= $0 }) ?? true else {
            throw AudioToolboxError(kAudioFileStreamError_InvalidPacketOffset, "packet \(packet) is not in the stream")
        }
        let found = try parser.seek(toPacket: packet, self)
        input.reset(to: found.offset)
        failure = nil
        return (found.offset - dataOffset, found.estimated)
    }

    // MARK: What parsers report

    /// Sets a property's value (through `update`) and tells the listener.
    func found(_ property: AudioFileStreamPropertyID, _ update: (inout StreamHeader) -> Void = { _ in }) {
        update(&header)
        var flags: AudioFileStreamPropertyFlags = []
        listener(clientData, ref, property, &flags)
    }

    /// The header is complete: the listener hears of every property in Apple's order, then ReadyToProducePackets.
    func headerComplete(_ properties: [AudioFileStreamPropertyID]) {
        for property in properties where (try? propertySize(property)) != nil { found(property) }
        header.ready = true
        found(kAudioFileStreamProperty_ReadyToProducePackets)
    }

    /// Hands packets to the packets callback: `count` packets in `bytes`, described by
    /// `descriptions` (nil for constant-size packets).
    func deliver(_ bytes: UnsafeRawBufferPointer, count: Int, descriptions: inout [AudioStreamPacketDescription]) {
        guard count > 0, let base = bytes.baseAddress else { return }
        header.deliveredPackets += Int64(count)
        if descriptions.isEmpty {
            header.deliveredBytes += Int64(bytes.count)
            header.largestDelivered = max(header.largestDelivered, header.dataFormat?.mBytesPerPacket ?? 0)
            packetsProc(clientData, UInt32(bytes.count), UInt32(count), base, nil)
        } else {
            for description in descriptions {
                header.largestDelivered = max(header.largestDelivered, description.mDataByteSize)
                header.deliveredBytes += Int64(description.mDataByteSize)
            }
            descriptions.withUnsafeMutableBufferPointer {
                packetsProc(clientData, UInt32(bytes.count), UInt32(count), base, $0.baseAddress)
            }
        }
    }

    // MARK: The live streams

    private static let live = LiveObjects<AudioFileStreamObject>()

    static func register(_ stream: AudioFileStreamObject) -> AudioFileStreamID {
        live.add(stream, as: stream.ref)
        return stream.ref
    }

    static func stream(_ ref: AudioFileStreamID?) throws(AudioToolboxError) -> AudioFileStreamObject {
        guard let ref, let stream = live.object(ref) else {
            throw AudioToolboxError(kAudio_ParamError, "not an open AudioFileStreamID")
        }
        return stream
    }

    static func unregister(_ ref: AudioFileStreamID) { live.remove(ref) }
}
