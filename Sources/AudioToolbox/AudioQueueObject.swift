import AudioCodec
import CAudioToolbox
import Dispatch
import Glibc
import JackDriver
import QueueCore

/// Where audio queues get their device. Queues made through Apple's C API open theirs on the
/// JACK server (`jack`); Swift programs and tests pass another provider explicitly — a
/// `JackDriver(serverName:)` for a named server, a `ManualDriver` (a clock the caller advances)
/// — to `AudioQueueNewOutput(…, device:)` and its siblings. There is no process-wide setting.
public enum AudioQueueDevices {
    /// The JACK server (`$JACK_DEFAULT_SERVER` or JACK's default): the C API's device. A
    /// playback queue made while no server runs has no device until a call needs one
    /// (AudioQueueObject+Device.swift): it renders offline meanwhile.
    public static let jack: DeviceProvider = JackDriver.shared

    /// The JACK server, with the queue's client named `clientName` from the start (a jaq
    /// extension; the server may make the name unique). Setting kAudioQueueProperty_JACKClientName
    /// later opens a second client and closes the first.
    /// - Parameter device: what the queue connects to at its creation, in the syntax of
    ///   kAudioQueueProperty_CurrentDevice ("" connects nothing); nil for the default
    ///   (`$JAQ_INPUT_DEVICE`, `$JAQ_OUTPUT_DEVICE`, "system"). For a program that sets
    ///   CurrentDevice right after: the default's connections are then never made only to be
    ///   removed (`jaq record` of 64 ports made 128 connections and removed 64).
    public static func jack(clientName: String, connectingTo device: String? = nil) -> DeviceProvider {
        NamedDeviceProvider(JackDriver.shared, name: clientName, target: device)
    }

    /// A device with no server (a jaq extension): for queues that only render offline
    /// (AudioQueueSetOfflineRenderFormat, AudioQueueOfflineRender), as `jaq render` makes them.
    /// Its clock runs only when a render advances it; it has no physical ports, so a queue
    /// made on it and started without an offline render format plays into nothing.
    /// - Parameters:
    ///   - sampleRate: the device's rate (a queue of another rate is resampled to it).
    ///   - periodFrames: frames per device cycle.
    public static func offline(sampleRate: Double, periodFrames: Int = 1024) -> DeviceProvider {
        ManualDriver(sampleRate: sampleRate, periodFrames: periodFrames, physicalPortCount: 0)
    }
}

/// The object behind an AudioQueueRef: the engine, the Apple callback, listeners,
/// the AudioQueueBuffer memory and the properties the engine does not keep.
final class AudioQueueObject: @unchecked Sendable {
    let engine: QueueEngine
    let format: AudioStreamBasicDescription
    let delivery: RunLoopDelivery?
    let state = Locked(State())
    /// A compressed input queue's encoder (its cookie and packet bound are properties).
    var encoder: QueueEncoder?

    struct Listener {
        let proc: AudioQueuePropertyListenerProc
        let userData: UnsafeMutableRawPointer?
    }

    struct State {
        var listeners: [AudioQueuePropertyID: [Listener]] = [:]
        var magicCookie: [UInt8] = []
        var channelLayout: [UInt8]? = nil
        /// ChannelAssignments as set: the port each channel connects to.
        var channelAssignments: [String]? = nil
        var codecPolicy: UInt32 = 0
        /// The codec's last error (kAudioQueueProperty_ConverterError), 0 if none.
        var converterError: Int32 = 0
        var timelines: [UnsafeMutableRawPointer: Timeline] = [:]
        var buffers: Set<UnsafeMutableRawPointer> = []
    }

    /// A timeline object: remembers how many discontinuities it has reported.
    final class Timeline {
        var seen: Int
        init(seen: Int) { self.seen = seen }
    }

    /// A queue that needs a codec (any format but linear PCM) asked to use a hardware one only
    /// (kAudioQueueHardwareCodecPolicy_UseHardwareOnly): there are no hardware codecs here, so
    /// Prime and Start fail, as the reference says they do when the codec asked for is not
    /// available, with kAudioQueueErr_InvalidCodecAccess ("the codec could not be accessed").
    func checkCodecAccess() throws {
        guard format.mFormatID != kAudioFormatLinearPCM,
              state.withLock({ $0.codecPolicy }) == kAudioQueueHardwareCodecPolicy_UseHardwareOnly else { return }
        throw AudioToolboxError(kAudioQueueErr_InvalidCodecAccess, "no hardware codec for \(fourCharacterCode(format.mFormatID))")
    }

    var output: OutputQueueEngine? { engine as? OutputQueueEngine }
    var input: InputQueueEngine? { engine as? InputQueueEngine }
    var ref: AudioQueueRef { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    init(engine: QueueEngine, format: AudioStreamBasicDescription, delivery: RunLoopDelivery?) {
        self.engine = engine
        self.format = format
        self.delivery = delivery
    }

    /// Installs the listener dispatch (after the object has its reference).
    func connectEvents() {
        engine.eventSink = { [weak self] event in
            guard let self else { return }
            let id: AudioQueuePropertyID
            switch event {
            case .isRunningChanged: id = kAudioQueueProperty_IsRunning
            case .recordUnderrun: id = kAudioQueueProperty_RecordUnderrun
            case .currentDeviceChanged: id = kAudioQueueProperty_CurrentDevice
            case .deviceChannelsChanged: id = kAudioQueueDeviceProperty_NumberChannels
            case .deviceSampleRateChanged: id = kAudioQueueDeviceProperty_SampleRate
            case .converterError(let code):
                id = kAudioQueueProperty_ConverterError
                state.withLock { $0.converterError = code }
            }
            let listeners = state.withLock { $0.listeners[id] ?? [] }
            for listener in listeners {
                // A listener may dispose of the queue: then no other listener hears of it.
                guard !engine.isDisposed else { return }
                listener.proc(listener.userData, self.ref, id)
            }
        }
    }

    // MARK: Buffers

    /// Allocates an AudioQueueBuffer and its data in one block:
    /// [AudioQueueBuffer][packet descriptions][data], data 16-byte aligned.
    func allocateBuffer(bytes: UInt32, packetDescriptions: UInt32) throws -> AudioQueueBufferRef {
        let header = MemoryLayout<AudioQueueBuffer>.stride
        let descriptions = Int(packetDescriptions) * MemoryLayout<AudioStreamPacketDescription>.stride
        let dataOffset = (header + descriptions + 15) & ~15
        let total = dataOffset + Int(bytes)
        guard total < Int(Int32.max) else { throw QueueError.invalidParameter("buffer of \(bytes) bytes") }
        guard let block = BufferMemory.allocate(byteCount: max(total, 16)) else {
            throw QueueError.invalidParameter("no memory for \(bytes) bytes")
        }
        let data = block + dataOffset
        let descriptionsPointer = packetDescriptions > 0
            ? (block + header).assumingMemoryBound(to: AudioStreamPacketDescription.self) : nil
        let buffer = block.bindMemory(to: AudioQueueBuffer.self, capacity: 1)
        buffer.initialize(to: AudioQueueBuffer(
            mAudioDataBytesCapacity: bytes, mAudioData: data, mAudioDataByteSize: 0, mUserData: nil,
            mPacketDescriptionCapacity: packetDescriptions, mPacketDescriptions: descriptionsPointer,
            mPacketDescriptionCount: 0))
        do {
            try engine.addBuffer(QueueBuffer(handle: block, data: data, byteCapacity: Int(bytes), packetCapacity: Int(packetDescriptions)))
        } catch {
            BufferMemory.free(block)
            throw error
        }
        state.withLock { _ = $0.buffers.insert(block) }
        return buffer
    }

    /// Frees a buffer that is not enqueued.
    func freeBuffer(_ buffer: AudioQueueBufferRef) throws {
        let block = UnsafeMutableRawPointer(buffer)
        guard state.withLock({ $0.buffers.contains(block) }) else { throw QueueError.invalidBuffer }
        try engine.removeBuffer(block)
        state.withLock { _ = $0.buffers.remove(block) }
        BufferMemory.free(block)
    }

    /// Frees everything once the engine is disposed of.
    func releaseResources() {
        let blocks = state.withLock { state -> Set<UnsafeMutableRawPointer> in
            let blocks = state.buffers
            state.buffers.removeAll()
            state.timelines.removeAll()
            state.listeners.removeAll()
            return blocks
        }
        BufferMemory.free(all: blocks)
        delivery?.invalidate()
    }
}

/// The AudioQueueRefs alive in this process: a call with anything else gets a
/// result code, not a crash.
enum AudioQueueRegistry {
    private static let live = LiveObjects<AudioQueueObject>()

    static func add(_ object: AudioQueueObject) { live.add(object, as: object.ref) }

    static func remove(_ object: AudioQueueObject) { live.remove(object.ref) }

    /// The object behind `ref`; throws -50 for NULL or a queue that is not alive.
    static func object(_ ref: AudioQueueRef?) throws -> AudioQueueObject {
        guard let ref else { throw AudioToolboxError(kAudio_ParamError, "NULL AudioQueueRef") }
        guard let object = live.object(ref) else {
            throw AudioToolboxError(kAudio_ParamError, "not a live audio queue")
        }
        return object
    }
}

/// Delivers callbacks on a CFRunLoop: a version-0 source the queue signals.
final class RunLoopDelivery: @unchecked Sendable {
    let runLoop: CFRunLoop
    let mode: CFRunLoopMode
    private var source: CFRunLoopSource?
    private let jobs = Locked<[@Sendable () -> Void]>([])

    init(runLoop: CFRunLoop, mode: CFRunLoopMode) {
        self.runLoop = runLoop
        self.mode = mode
        var context = CFRunLoopSourceContext()
        context.info = Unmanaged.passUnretained(self).toOpaque()
        context.perform = { info in
            guard let info else { return }
            Unmanaged<RunLoopDelivery>.fromOpaque(info).takeUnretainedValue().performJobs()
        }
        source = CFRunLoopSourceCreate(nil, 0, &context)
        if let source { CFRunLoopAddSource(runLoop, source, mode) }
    }

    var executor: CallbackExecutor {
        .custom { [self] job in self.post(job) }
    }

    func post(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        if let source { CFRunLoopSourceSignal(source) }
        CFRunLoopWakeUp(runLoop)
    }

    /// Runs the posted callbacks now if the calling thread is the run loop's own thread (an
    /// offline render waiting for a callback that its run loop would run: on Apple platforms,
    /// AQOfflineRenderTest renders on the thread whose run loop gets the callbacks, and never
    /// runs that loop while it renders).
    func performJobsIfOnRunLoopThread() {
        guard CFRunLoopGetCurrent() === runLoop else { return }
        performJobs()
    }

    private func performJobs() {
        while true {
            let next = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            guard let next else { return }
            next()
        }
    }

    func invalidate() {
        if let source {
            CFRunLoopRemoveSource(runLoop, source, mode)
            CFRunLoopSourceInvalidate(source)
        }
        source = nil
    }
}

/// The default JACK client name: the program's name and the queue's direction.
func defaultClientName(_ direction: DeviceDirection) -> String {
    var name = "audioqueue"
    if let file = fopen("/proc/self/comm", "r") {
        var buffer = [CChar](repeating: 0, count: 64)
        if fgets(&buffer, 64, file) != nil {
            let bytes = buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }
            let text = String(decoding: bytes, as: UTF8.self)
            if !text.isEmpty { name = text }
        }
        fclose(file)
    }
    return name + (direction == .output ? "-out" : "-in")
}

/// The engine's format for an AudioStreamBasicDescription; throws 'fmt?' for what a queue can't take.
func streamFormat(_ asbd: AudioStreamBasicDescription, allowsZeroRate: Bool) throws -> StreamFormat {
    let encoding: StreamFormat.Encoding
    switch asbd.mFormatID {
    case kAudioFormatLinearPCM: encoding = .linearPCM
    case kAudioFormatULaw: encoding = .muLaw
    case kAudioFormatALaw: encoding = .aLaw
    default:
        throw QueueError.unsupportedFormat("format \(fourCharacterCode(asbd.mFormatID)) (queues take linear PCM, µ-law and A-law)")
    }
    let flags = asbd.mFormatFlags
    if encoding == .linearPCM, flags & kAudioFormatFlagIsFloat != 0, flags & kAudioFormatFlagIsSignedInteger != 0 {
        throw QueueError.unsupportedFormat("kAudioFormatFlagIsFloat and kAudioFormatFlagIsSignedInteger together")
    }
    // Non-interleaved (a jaq extension): as in an AudioBufferList, mBytesPerFrame and
    // mBytesPerPacket count one channel; the engine counts frames of every channel.
    let nonInterleaved = flags & kAudioFormatFlagIsNonInterleaved != 0
    // (At most one more than a queue takes: a hostile channel count must not overflow the products.)
    let planes = nonInterleaved ? min(Int(asbd.mChannelsPerFrame), StreamFormat.maximumChannels + 1) : 1
    // In 64 bits: mBytesPerFrame × 8 overflows 32 for the values a hostile caller passes.
    let bitsPerFrame = UInt64(asbd.mBytesPerFrame) * 8 * UInt64(planes)
    let format = StreamFormat(
        sampleRate: asbd.mSampleRate, encoding: encoding,
        isFloat: encoding == .linearPCM && flags & kAudioFormatFlagIsFloat != 0,
        isBigEndian: flags & kAudioFormatFlagIsBigEndian != 0,
        isSignedInteger: flags & kAudioFormatFlagIsSignedInteger != 0,
        isPacked: flags & kAudioFormatFlagIsPacked != 0 || UInt64(asbd.mBitsPerChannel) == bitsPerFrame / UInt64(max(asbd.mChannelsPerFrame, 1)),
        isAlignedHigh: flags & kAudioFormatFlagIsAlignedHigh != 0,
        isNonInterleaved: nonInterleaved,
        bytesPerFrame: Int(asbd.mBytesPerFrame) * planes, channelCount: Int(asbd.mChannelsPerFrame),
        bitsPerChannel: Int(asbd.mBitsPerChannel))
    try format.validate(allowsZeroRate: allowsZeroRate, bytesPerPacket: Int(asbd.mBytesPerPacket) * planes,
                        framesPerPacket: Int(asbd.mFramesPerPacket))
    return format
}

/// The memory of queue buffers: zeroed, 16-byte aligned, and for large buffers mapped pages
/// that cost nothing until the queue first fills them (a recorder that allocates seconds of
/// buffers up front uses only those it cycles). calloc alone does not promise that: once
/// glibc has freed a large block it raises its mmap threshold and serves the next ones from
/// the heap, zeroing every page. 16 bytes before each block record its size and origin.
enum BufferMemory {
    private static let prefix = 16
    private static let mapThreshold = 64 << 10

    static func allocate(byteCount: Int) -> UnsafeMutableRawPointer? {
        let total = byteCount + prefix
        let mapped = total >= mapThreshold
        let base: UnsafeMutableRawPointer
        if mapped {
            guard let pages = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                  pages != MAP_FAILED else { return nil }
            base = pages
        } else {
            guard let memory = calloc(1, total) else { return nil }
            base = memory
        }
        base.storeBytes(of: total, as: Int.self)
        base.storeBytes(of: mapped ? 1 : 0, toByteOffset: 8, as: Int.self)
        return base + prefix
    }

    /// A block's allocation, from the 16 bytes before it: where it begins, its size, and
    /// whether it is pages of its own (else calloc's).
    private static func allocation(of block: UnsafeMutableRawPointer) -> (base: UnsafeMutableRawPointer, total: Int, mapped: Bool) {
        let base = block - prefix
        return (base, base.load(as: Int.self), base.load(fromByteOffset: 8, as: Int.self) == 1)
    }

    static func free(_ block: UnsafeMutableRawPointer) {
        let (base, total, mapped) = allocation(of: block)
        if mapped { munmap(base, total) } else { Glibc.free(base) }
    }

    /// Frees `blocks` together (a disposed queue's): mapped blocks that lie next to each other
    /// (the kernel places successive mappings so) are unmapped by one `munmap` per run, not one
    /// each. A recorder's 40 buffers cost 107 µs unmapped one by one, 1.3 µs at once (issue #29).
    /// A run is only ever blocks of `blocks`, each ending on the page where the next begins.
    static func free(all blocks: some Collection<UnsafeMutableRawPointer>) {
        let page = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
        var mapped: [(start: Int, end: Int)] = []
        mapped.reserveCapacity(blocks.count)
        for block in blocks {
            let (base, total, isMapped) = allocation(of: block)
            guard isMapped else {
                Glibc.free(base)
                continue
            }
            let start = Int(bitPattern: base)
            mapped.append((start, start + (total + page - 1) / page * page))
        }
        mapped.sort { $0.start < $1.start }
        var index = 0
        while index < mapped.count {
            var end = mapped[index].end
            var next = index + 1
            while next < mapped.count && mapped[next].start == end {
                end = mapped[next].end
                next += 1
            }
            munmap(UnsafeMutableRawPointer(bitPattern: mapped[index].start), end - mapped[index].start)
            index = next
        }
    }
}
