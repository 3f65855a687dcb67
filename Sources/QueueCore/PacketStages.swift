import Synchronization

/// One packet of a compressed buffer: Apple's AudioStreamPacketDescription.
public struct PacketDescription: Sendable, Equatable {
    /// Byte offset of the packet in the buffer's data.
    public var offset: Int
    /// Frames in the packet when they vary (0: the format's frames per packet).
    public var variableFrames: Int
    /// Bytes of the packet.
    public var size: Int

    public init(offset: Int, variableFrames: Int, size: Int) {
        self.offset = offset
        self.variableFrames = variableFrames
        self.size = size
    }
}

/// A decoder of compressed packets to planar Float32 (AudioCodec's, over FFmpeg). QueueCore
/// knows only this protocol: the codec library stays out of the engine.
public protocol PacketDecoding: AnyObject {
    /// Frames of a packet with no variable count (the silence a refused packet becomes).
    var framesPerPacket: Int { get }
    /// Decodes one packet into `decodedPlanes`; returns its frames, or an OSStatus-like error
    /// code with `frames` of silence in the planes.
    func decodePacket(_ bytes: UnsafeRawBufferPointer) -> (frames: Int, error: Int32)
    /// The planes of the last decodePacket (valid until the next call).
    var decodedPlanes: UnsafePointer<UnsafeMutablePointer<Float>> { get }
    /// Forgets the stream (a reset).
    func resetDecoder()
}

/// An encoder of planar Float32 to compressed packets.
public protocol PacketEncoding: AnyObject {
    var framesPerPacket: Int { get }
    /// Feeds frames; returns 0 or an error code.
    func encodeFrames(_ planes: UnsafePointer<UnsafePointer<Float>>, frames: Int) -> Int32
    /// The end of a stream: what is buffered comes out in packets.
    func finishEncoding() -> Int32
    /// The next packet: its bytes, its frames, and its first frame's stream time (negative in the priming).
    func nextEncodedPacket() -> (bytes: [UInt8], frames: Int, streamFrame: Int64)?
    /// Puts back the packet `nextEncodedPacket` gave last.
    func unreadPacket()
    /// A new stream (after Stop or Reset): the encoder starts over.
    func resetEncoder()
}

/// What an output queue needs to play a compressed stream.
public struct CompressedStream: Sendable {
    /// Frames of a packet whose description gives none.
    public var framesPerPacket: Int
    /// Bytes of every packet for constant-size formats (IMA4), else 0.
    public var bytesPerPacket: Int
    /// Makes the decoder from a magic cookie (empty when none was set).
    public var makeDecoder: @Sendable ([UInt8]) throws -> PacketDecoding

    public init(framesPerPacket: Int, bytesPerPacket: Int, makeDecoder: @escaping @Sendable ([UInt8]) throws -> PacketDecoding) {
        self.framesPerPacket = framesPerPacket
        self.bytesPerPacket = bytesPerPacket
        self.makeDecoder = makeDecoder
    }
}

/// The compressed side of an output queue: the decoder (made, and remade when the magic
/// cookie changes, on the queue thread) and the decoded frames of the buffer being played.
final class OutputPacketStage {
    private let makeDecoder: @Sendable ([UInt8]) throws -> PacketDecoding
    private let cookie = Mutex<(bytes: [UInt8], generation: Int)>(([], 0))
    private var decoder: PacketDecoding?
    private var decoderGeneration = -1
    /// The decoded frames of the head buffer.
    let store: GrowablePlanes
    private(set) var storedFrames = 0

    init(channelCount: Int, makeDecoder: @escaping @Sendable ([UInt8]) throws -> PacketDecoding) {
        self.makeDecoder = makeDecoder
        store = GrowablePlanes(channelCount: channelCount)
    }

    /// A new magic cookie (any thread): the next buffer decodes with it.
    func setCookie(_ bytes: [UInt8]) {
        cookie.withLock { $0 = (bytes, $0.generation + 1) }
    }

    func reset() { decoder?.resetDecoder() }

    /// Frames `packets` hold by their descriptions.
    func frames(of packets: [PacketDescription], framesPerPacket: Int) -> Int {
        packets.reduce(0) { $0 + ($1.variableFrames > 0 ? $1.variableFrames : framesPerPacket) }
    }

    /// Decodes every packet of a buffer into `store`; returns the frames and the last error (0 if none).
    func decode(_ data: UnsafeRawPointer, packets: [PacketDescription], framesPerPacket: Int) -> (frames: Int, error: Int32) {
        let (bytes, generation) = cookie.withLock { ($0.bytes, $0.generation) }
        var lastError: Int32 = 0
        if decoder == nil || generation != decoderGeneration {
            decoderGeneration = generation
            decoder = try? makeDecoder(bytes)
        }
        storedFrames = 0
        for packet in packets {
            let expected = packet.variableFrames > 0 ? packet.variableFrames : framesPerPacket
            guard let decoder else {
                // No decoder for this stream (a missing or bad cookie): silence, and the error says so.
                append(silence: expected)
                lastError = codecErrorStatus
                continue
            }
            let (frames, error) = decoder.decodePacket(UnsafeRawBufferPointer(start: data + packet.offset, count: packet.size))
            if error != 0 { lastError = error }
            store.reserve(storedFrames + frames)
            for c in 0..<store.channelCount {
                (store.planes[c] + storedFrames).update(from: decoder.decodedPlanes[c], count: frames)
            }
            storedFrames += frames
        }
        return (storedFrames, lastError)
    }

    private func append(silence count: Int) {
        store.reserve(storedFrames + count)
        for c in 0..<store.channelCount { (store.planes[c] + storedFrames).update(repeating: 0, count: count) }
        storedFrames += count
    }

    /// Copies `count` stored frames from `from` into `planes`.
    func copy(from: Int, count: Int, into planes: UnsafeMutablePointer<UnsafeMutablePointer<Float>>) {
        for c in 0..<store.channelCount { planes[c].update(from: store.planes[c] + from, count: count) }
    }
}

/// 'what': the status a compressed stream reports when it has no decoder (ConverterError).
let codecErrorStatus: Int32 = 0x7768_6174

/// Planar Float32 storage that grows, keeping what it holds (queue threads and codecs, never realtime).
public final class GrowablePlanes {
    public let channelCount: Int
    public let planes: UnsafeMutablePointer<UnsafeMutablePointer<Float>>
    public private(set) var capacity = 0

    public init(channelCount: Int) {
        self.channelCount = channelCount
        planes = .allocate(capacity: channelCount)
        for c in 0..<channelCount { planes[c] = .allocate(capacity: 1) }
    }

    deinit {
        for c in 0..<channelCount { planes[c].deallocate() }
        planes.deallocate()
    }

    /// Room for `frames` frames.
    public func reserve(_ frames: Int) {
        guard frames > capacity else { return }
        let grown = max(frames, capacity * 2, 4096)
        for c in 0..<channelCount {
            let fresh = UnsafeMutablePointer<Float>.allocate(capacity: grown)
            fresh.update(from: planes[c], count: capacity)
            planes[c].deallocate()
            planes[c] = fresh
        }
        capacity = grown
    }
}

/// The compressed side of an input queue: the encoder and the stream time its packets count from.
final class InputPacketStage {
    let encoder: PacketEncoding
    /// Queue time of the encoder stream's frame 0.
    var streamOrigin: Double = 0
    /// True once frames went in since the last finish.
    var hasInput = false
    /// Packets dropped because they did not fit an empty buffer.
    var droppedPackets = 0

    init(encoder: PacketEncoding) { self.encoder = encoder }
}
