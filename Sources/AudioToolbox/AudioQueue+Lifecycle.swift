import CAudioToolbox
import Dispatch
import QueueCore

// AudioQueueNewOutput, AudioQueueNewInput (and their dispatch-queue forms),
// AudioQueueDispose. C and Swift callers reach the same code: the C header
// declares these names, the implementations are exported with @_cdecl.
//
// Every @_cdecl function is `public`: the C symbol gets the Swift function's visibility, and
// an internal one is hidden in release builds (debug builds export it only because SwiftPM
// compiles them with -enable-testing). The Swift names (audioQueueNewOutput, ...) are not
// meant for callers; Swift code calls the C names, as on Apple platforms.

/// A C caller's CFRunLoopRef or CFStringRef argument as the object it points to.
private func object<T: AnyObject>(_ pointer: OpaquePointer?, as type: T.Type) -> T? {
    pointer.map { Unmanaged<T>.fromOpaque(UnsafeRawPointer($0)).takeUnretainedValue() }
}

/// The callback executor for a Swift caller's run loop: nil means the queue's own thread.
private func delivery(runLoop: CFRunLoop?, mode: CFString?) -> RunLoopDelivery? {
    guard let runLoop else { return nil }
    return RunLoopDelivery(runLoop: runLoop, mode: mode.map { CFRunLoopMode(rawValue: $0) } ?? CFRunLoopMode.commonModes)
}

/// The complete format a queue reports (an input queue's rate 0 becomes the server's rate).
private func completeFormat(_ asbd: AudioStreamBasicDescription, engine: QueueEngine) -> AudioStreamBasicDescription {
    var format = asbd
    format.mSampleRate = engine.format.sampleRate
    if format.mFramesPerPacket == 0 { format.mFramesPerPacket = 1 }
    if format.mBytesPerPacket == 0 { format.mBytesPerPacket = format.mBytesPerFrame }
    return format
}

/// Registers a new queue object and hands out its reference.
private func publish(_ object: AudioQueueObject, to outAQ: UnsafeMutablePointer<AudioQueueRef?>) {
    AudioQueueRegistry.add(object)
    object.connectEvents()
    object.engine.onDisposed = { [weak object] in
        guard let object else { return }
        AudioQueueRegistry.remove(object)
        object.releaseResources()
    }
    outAQ.pointee = object.ref
}

/// A box letting the engine's callbacks reach the object created after the engine.
private final class ObjectBox: @unchecked Sendable {
    weak var object: AudioQueueObject?
}

/// Holds a C caller's user data pointer across threads.
private struct UserData: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}

func makeOutputQueue(
    format inFormat: UnsafePointer<AudioStreamBasicDescription>?, flags: UInt32,
    delivery: RunLoopDelivery?, executor: CallbackExecutor, outAQ: UnsafeMutablePointer<AudioQueueRef?>?,
    device: DeviceProvider,
    callback: @escaping @Sendable (AudioQueueRef, AudioQueueBufferRef) -> Void
) throws {
    guard let inFormat, let outAQ else { throw AudioToolboxError(kAudio_ParamError, "NULL format or outAQ") }
    outAQ.pointee = nil
    let codec = codecFormat(inFormat.pointee)
    let format = try codec.map { try decodedFormat($0, allowsZeroRate: false) } ?? streamFormat(inFormat.pointee, allowsZeroRate: false)
    let compressed = try codec.map(compressedStream)
    let box = ObjectBox()
    // With no server running the queue is made all the same (it can render offline), and
    // connects to the server at the first call that needs the device (DeferredDevice.swift).
    let engine = try OutputQueueEngine(
        format: format, provider: DeferringDeviceProvider(device, sampleRate: format.sampleRate),
        clientName: defaultClientName(.output),
        executor: delivery?.executor ?? executor, compressed: compressed
    ) { buffer in
        guard let object = box.object else { return }
        callback(object.ref, buffer.handle.assumingMemoryBound(to: AudioQueueBuffer.self))
    }
    let complete = codec == nil ? completeFormat(inFormat.pointee, engine: engine)
        : completeCompressedFormat(inFormat.pointee, rate: engine.format.sampleRate, encoder: nil)
    let object = AudioQueueObject(engine: engine, format: complete, delivery: delivery)
    box.object = object
    publish(object, to: outAQ)
}

func makeInputQueue(
    format inFormat: UnsafePointer<AudioStreamBasicDescription>?, flags: UInt32,
    delivery: RunLoopDelivery?, executor: CallbackExecutor, outAQ: UnsafeMutablePointer<AudioQueueRef?>?,
    device: DeviceProvider,
    callback: @escaping @Sendable (AudioQueueRef, AudioQueueBufferRef, UnsafePointer<AudioTimeStamp>, UInt32,
                                   UnsafePointer<AudioStreamPacketDescription>?) -> Void
) throws {
    guard let inFormat, let outAQ else { throw AudioToolboxError(kAudio_ParamError, "NULL format or outAQ") }
    outAQ.pointee = nil
    let codec = codecFormat(inFormat.pointee)
    let format = try codec.map { try decodedFormat($0, allowsZeroRate: true) } ?? streamFormat(inFormat.pointee, allowsZeroRate: true)
    let encoder = try codec.map { try queueEncoder($0) }
    let box = ObjectBox()
    let engine = try InputQueueEngine(
        format: format, provider: device, clientName: defaultClientName(.input),
        executor: delivery?.executor ?? executor, encoder: encoder
    ) { buffer, bytes, packets, stamp in
        guard let object = box.object else { return }
        let ref = buffer.handle.assumingMemoryBound(to: AudioQueueBuffer.self)
        ref.pointer(to: \.mAudioDataByteSize)!.pointee = UInt32(bytes)
        // Compressed: the descriptions go to the callback, and into the buffer where it has room.
        var descriptions = appleDescriptions(buffer.packets)
        let room = min(descriptions.count, Int(ref.pointee.mPacketDescriptionCapacity))
        if room > 0, let own = ref.pointee.mPacketDescriptions { own.update(from: descriptions, count: room) }
        ref.pointer(to: \.mPacketDescriptionCount)!.pointee = UInt32(room)
        var time = AudioTimeStamp()
        time.mSampleTime = stamp.sampleTime
        time.mHostTime = stamp.hostTime
        time.mRateScalar = 1
        time.mFlags = [.sampleTimeValid, .hostTimeValid, .rateScalarValid]
        descriptions.withUnsafeMutableBufferPointer { d in
            callback(object.ref, ref, &time, UInt32(packets), d.isEmpty ? nil : UnsafePointer(d.baseAddress))
        }
    }
    if let encoder, encoder.encoder == nil {
        do {
            try encoder.open(sampleRate: engine.format.sampleRate)
        } catch {
            engine.dispose(immediate: true)
            throw queueStatus(error)
        }
    }
    let complete = codec == nil ? completeFormat(inFormat.pointee, engine: engine)
        : completeCompressedFormat(inFormat.pointee, rate: engine.format.sampleRate, encoder: encoder)
    let object = AudioQueueObject(engine: engine, format: complete, delivery: delivery)
    object.encoder = encoder
    box.object = object
    publish(object, to: outAQ)
}

/// Creates a playback queue, as `AudioQueueNewOutput`, whose device comes from `device`
/// rather than the JACK server: a `JackDriver(serverName:)` or a `ManualDriver` (tests, offline
/// rendering). The C function is this with `AudioQueueDevices.jack`.
/// - Returns: what `AudioQueueNewOutput` returns.
public func AudioQueueNewOutput(
    _ inFormat: UnsafePointer<AudioStreamBasicDescription>?, _ inCallbackProc: AudioQueueOutputCallback?,
    _ inUserData: UnsafeMutableRawPointer?, _ inCallbackRunLoop: CFRunLoop?, _ inCallbackRunLoopMode: CFString?,
    _ inFlags: UInt32, _ outAQ: UnsafeMutablePointer<AudioQueueRef?>?, device: DeviceProvider
) -> OSStatus {
    withStatus {
        guard let inCallbackProc else { throw AudioToolboxError(kAudio_ParamError, "NULL callback") }
        let userData = UserData(pointer: inUserData)
        try makeOutputQueue(format: inFormat, flags: inFlags, delivery: delivery(runLoop: inCallbackRunLoop, mode: inCallbackRunLoopMode),
                            executor: .queueThread, outAQ: outAQ, device: device) { inCallbackProc(userData.pointer, $0, $1) }
    }
}

/// Creates a recording queue, as `AudioQueueNewInput`, whose device comes from `device`
/// rather than the JACK server. The C function is this with `AudioQueueDevices.jack`.
/// - Returns: what `AudioQueueNewInput` returns.
public func AudioQueueNewInput(
    _ inFormat: UnsafePointer<AudioStreamBasicDescription>?, _ inCallbackProc: AudioQueueInputCallback?,
    _ inUserData: UnsafeMutableRawPointer?, _ inCallbackRunLoop: CFRunLoop?, _ inCallbackRunLoopMode: CFString?,
    _ inFlags: UInt32, _ outAQ: UnsafeMutablePointer<AudioQueueRef?>?, device: DeviceProvider
) -> OSStatus {
    withStatus {
        guard let inCallbackProc else { throw AudioToolboxError(kAudio_ParamError, "NULL callback") }
        let userData = UserData(pointer: inUserData)
        try makeInputQueue(format: inFormat, flags: inFlags, delivery: delivery(runLoop: inCallbackRunLoop, mode: inCallbackRunLoopMode),
                           executor: .queueThread, outAQ: outAQ, device: device) { inCallbackProc(userData.pointer, $0, $1, $2, $3, $4) }
    }
}

@_cdecl("AudioQueueNewOutput")
public func audioQueueNewOutput(
    _ inFormat: UnsafePointer<AudioStreamBasicDescription>?, _ inCallbackProc: AudioQueueOutputCallback?,
    _ inUserData: UnsafeMutableRawPointer?, _ inCallbackRunLoop: OpaquePointer?, _ inCallbackRunLoopMode: OpaquePointer?,
    _ inFlags: UInt32, _ outAQ: UnsafeMutablePointer<AudioQueueRef?>?
) -> OSStatus {
    AudioQueueNewOutput(inFormat, inCallbackProc, inUserData, object(inCallbackRunLoop, as: CFRunLoop.self),
                        object(inCallbackRunLoopMode, as: CFString.self), inFlags, outAQ, device: AudioQueueDevices.jack)
}

@_cdecl("AudioQueueNewInput")
public func audioQueueNewInput(
    _ inFormat: UnsafePointer<AudioStreamBasicDescription>?, _ inCallbackProc: AudioQueueInputCallback?,
    _ inUserData: UnsafeMutableRawPointer?, _ inCallbackRunLoop: OpaquePointer?, _ inCallbackRunLoopMode: OpaquePointer?,
    _ inFlags: UInt32, _ outAQ: UnsafeMutablePointer<AudioQueueRef?>?
) -> OSStatus {
    AudioQueueNewInput(inFormat, inCallbackProc, inUserData, object(inCallbackRunLoop, as: CFRunLoop.self),
                       object(inCallbackRunLoopMode, as: CFString.self), inFlags, outAQ, device: AudioQueueDevices.jack)
}

/// A playback queue's callback as a block (AudioQueueNewOutputWithDispatchQueue).
public typealias AudioQueueOutputCallbackBlock = (AudioQueueRef, AudioQueueBufferRef) -> Void

/// A recording queue's callback as a block (AudioQueueNewInputWithDispatchQueue).
public typealias AudioQueueInputCallbackBlock = (
    AudioQueueRef, AudioQueueBufferRef, UnsafePointer<AudioTimeStamp>, UInt32, UnsafePointer<AudioStreamPacketDescription>?
) -> Void

private struct SendableBlock<T>: @unchecked Sendable { let block: T }

/// Callbacks and listeners run on `queue` (the WithDispatchQueue forms).
private func executor(_ queue: DispatchQueue) -> CallbackExecutor {
    .custom { work in queue.async(execute: work) }
}

/// Creates a playback queue whose callback block runs on `inCallbackDispatchQueue`; its device
/// comes from `device` (the JACK server by default).
public func AudioQueueNewOutputWithDispatchQueue(
    _ outAQ: UnsafeMutablePointer<AudioQueueRef?>, _ inFormat: UnsafePointer<AudioStreamBasicDescription>,
    _ inFlags: UInt32, _ inCallbackDispatchQueue: DispatchQueue, device: DeviceProvider = AudioQueueDevices.jack,
    _ inCallbackBlock: @escaping AudioQueueOutputCallbackBlock
) -> OSStatus {
    withStatus {
        let block = SendableBlock(block: inCallbackBlock)
        try makeOutputQueue(format: inFormat, flags: inFlags, delivery: nil,
                            executor: executor(inCallbackDispatchQueue), outAQ: outAQ, device: device) { aq, buffer in
            block.block(aq, buffer)
        }
    }
}

/// Creates a recording queue whose callback block runs on `inCallbackDispatchQueue`; its device
/// comes from `device` (the JACK server by default).
public func AudioQueueNewInputWithDispatchQueue(
    _ outAQ: UnsafeMutablePointer<AudioQueueRef?>, _ inFormat: UnsafePointer<AudioStreamBasicDescription>,
    _ inFlags: UInt32, _ inCallbackDispatchQueue: DispatchQueue, device: DeviceProvider = AudioQueueDevices.jack,
    _ inCallbackBlock: @escaping AudioQueueInputCallbackBlock
) -> OSStatus {
    withStatus {
        let block = SendableBlock(block: inCallbackBlock)
        try makeInputQueue(format: inFormat, flags: inFlags, delivery: nil,
                           executor: executor(inCallbackDispatchQueue), outAQ: outAQ, device: device) { aq, buffer, time, packets, descriptions in
            block.block(aq, buffer, time, packets, descriptions)
        }
    }
}

@_cdecl("AudioQueueDispose")
public func audioQueueDispose(_ inAQ: AudioQueueRef?, _ inImmediate: UInt8) -> OSStatus {
    withStatus {
        let object = try AudioQueueRegistry.object(inAQ)
        object.engine.dispose(immediate: inImmediate != 0)
    }
}
