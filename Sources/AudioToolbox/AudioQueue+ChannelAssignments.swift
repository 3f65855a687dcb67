import CAudioToolbox
import QueueCore

// kAudioQueueProperty_ChannelAssignments (the "device UID" is a JACK port name) and
// kAudioQueueProperty_ChannelLayout applied to the physical ports by channel label.

/// The channel labels a layout gives its channels, in order; nil when it names none
/// (DiscreteInOrder, unknown tags) or cannot be read.
func channelLabels(ofLayout bytes: [UInt8]) -> [AudioChannelLabel]? {
    guard bytes.count >= 12 else { return nil }
    return bytes.withUnsafeBytes { raw -> [AudioChannelLabel]? in
        let tag = raw.loadUnaligned(as: AudioChannelLayoutTag.self)
        let L = kAudioChannelLabel_Left, R = kAudioChannelLabel_Right, C = kAudioChannelLabel_Center
        let LFE = kAudioChannelLabel_LFEScreen, Ls = kAudioChannelLabel_LeftSurround
        let Rs = kAudioChannelLabel_RightSurround, Cs = kAudioChannelLabel_CenterSurround
        switch tag {
        case kAudioChannelLayoutTag_UseChannelDescriptions:
            let count = Int(raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            let stride = MemoryLayout<AudioChannelDescription>.size
            guard count > 0, bytes.count >= 12 + count * stride else { return nil }
            return (0..<count).map { raw.loadUnaligned(fromByteOffset: 12 + $0 * stride, as: AudioChannelLabel.self) }
        case kAudioChannelLayoutTag_UseChannelBitmap:
            let bitmap = raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
            return (0..<32).filter { bitmap & (1 << $0) != 0 }.map { AudioChannelLabel($0 + 1) }
        case kAudioChannelLayoutTag_Stereo: return [L, R]
        case kAudioChannelLayoutTag_MPEG_3_0_A: return [L, R, C]
        case kAudioChannelLayoutTag_MPEG_3_0_B: return [C, L, R]
        case kAudioChannelLayoutTag_Quadraphonic: return [L, R, Ls, Rs]
        case kAudioChannelLayoutTag_MPEG_4_0_A: return [L, R, C, Cs]
        case kAudioChannelLayoutTag_MPEG_4_0_B: return [C, L, R, Cs]
        case kAudioChannelLayoutTag_MPEG_5_0_A: return [L, R, C, Ls, Rs]
        case kAudioChannelLayoutTag_MPEG_5_0_B: return [L, R, Ls, Rs, C]
        case kAudioChannelLayoutTag_MPEG_5_0_C: return [L, C, R, Ls, Rs]
        case kAudioChannelLayoutTag_MPEG_5_0_D: return [C, L, R, Ls, Rs]
        case kAudioChannelLayoutTag_MPEG_5_1_A: return [L, R, C, LFE, Ls, Rs]
        case kAudioChannelLayoutTag_MPEG_5_1_B: return [L, R, Ls, Rs, C, LFE]
        case kAudioChannelLayoutTag_MPEG_5_1_C: return [L, C, R, Ls, Rs, LFE]
        case kAudioChannelLayoutTag_MPEG_5_1_D: return [C, L, R, Ls, Rs, LFE]
        default: return nil
        }
    }
}

/// The trailing number of a port name ("system:playback_3" → 3), 0 if none.
private func trailingNumber(_ name: String) -> UInt32 {
    UInt32(String(name.reversed().prefix { $0.isASCII && $0.isNumber }.reversed())) ?? 0
}

extension AudioQueueObject {
    /// "system:playback_" or "system:capture_": the physical ports a queue of this direction connects to.
    private var physicalPrefix: String { engine.direction == .output ? "system:playback_" : "system:capture_" }

    var channelAssignmentsSize: UInt32 {
        format.mChannelsPerFrame * UInt32(MemoryLayout<AudioQueueChannelAssignment>.size)
    }

    /// The port each channel is connected to: as assigned, else as CurrentDevice connects them.
    func currentChannelAssignments() -> [String] {
        if let assigned = state.withLock({ $0.channelAssignments }) { return assigned }
        let target = engine.connectionTargetValue
        let ports = target.contains(",")
            ? target.split(separator: ",").map { String($0).trimmingWhitespace() }
            : PortMatcher.naturalSorted(engine.connectedDevicePorts)
        let channels = Int(format.mChannelsPerFrame)
        guard !ports.isEmpty else { return Array(repeating: "", count: channels) }
        return (0..<channels).map { ports[$0 % ports.count] }
    }

    /// Writes the assignments (one AudioQueueChannelAssignment per channel, the caller releases the strings).
    func putChannelAssignments(_ data: UnsafeMutableRawPointer?, _ size: UnsafeMutablePointer<UInt32>) throws {
        guard size.pointee >= channelAssignmentsSize else {
            throw AudioToolboxError(kAudioQueueErr_InvalidPropertySize, "the value is \(channelAssignmentsSize) bytes")
        }
        guard let data else { throw AudioToolboxError(kAudio_ParamError, "NULL outData") }
        let list = data.bindMemory(to: AudioQueueChannelAssignment.self, capacity: Int(format.mChannelsPerFrame))
        for (i, port) in currentChannelAssignments().enumerated() {
            guard let uid = CFStringCreateWithCString(nil, port, CFStringEncoding(kCFStringEncodingUTF8)) else {
                throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "port name \(port)")
            }
            list[i] = AudioQueueChannelAssignment(mDeviceUID: Unmanaged.passRetained(uid), mChannelNumber: trailingNumber(port))
        }
        size.pointee = channelAssignmentsSize
    }

    /// Connects channel i to the port assignment i names: mDeviceUID is a JACK port name
    /// ("client:port"), or "system" with mChannelNumber the physical port (1-based).
    func setChannelAssignments(_ data: UnsafeRawPointer?, _ size: UInt32) throws {
        guard size == channelAssignmentsSize else {
            throw AudioToolboxError(kAudioQueueErr_InvalidPropertySize,
                                    "one AudioQueueChannelAssignment per channel: \(channelAssignmentsSize) bytes")
        }
        guard let data else { throw AudioToolboxError(kAudio_ParamError, "NULL inData") }
        var ports: [String] = []
        for i in 0..<Int(format.mChannelsPerFrame) {
            let offset = i * MemoryLayout<AudioQueueChannelAssignment>.size
            // Read as a raw pointer first: a C caller's NULL is no valid CFString.
            guard let uidPointer = data.loadUnaligned(fromByteOffset: offset, as: UnsafeRawPointer?.self) else {
                throw AudioToolboxError(kAudioQueueErr_InvalidPropertyValue, "channel \(i + 1) has no device UID")
            }
            let channelNumber = data.loadUnaligned(
                fromByteOffset: offset + MemoryLayout<AudioQueueChannelAssignment>.offset(of: \.mChannelNumber)!, as: UInt32.self)
            let name = String(Unmanaged<CFString>.fromOpaque(uidPointer).takeUnretainedValue())
            if name.contains(":") {
                ports.append(name)
            } else if name == "system", channelNumber > 0 {
                ports.append(physicalPrefix + String(channelNumber))
            } else {
                throw QueueError.invalidDevice("\(name) channel \(channelNumber): a device UID is a JACK port name")
            }
        }
        try engine.setCurrentDevice(ports.joined(separator: ","))
        state.withLock { $0.channelAssignments = ports }
    }

    /// With CurrentDevice "system", a layout whose channels have labels connects channel i to
    /// the physical port of its label (Left 1, Right 2, Center 3, LFE 4, Ls 5, Rs 6, ...: the
    /// WAVE/SMPTE order), so a C-L-R-Ls-Rs-LFE queue reaches the speakers a 5.1 system expects.
    /// Layouts that name no labels, or labels the server has no port for, keep the plain order.
    func applyChannelLayoutToPorts() {
        guard engine.currentDevice == "system", format.mChannelsPerFrame > 1,
              state.withLock({ $0.channelAssignments == nil }) else { return }
        let layout = state.withLock { $0.channelLayout }
        guard let layout, let labels = channelLabels(ofLayout: layout), labels.count == Int(format.mChannelsPerFrame),
              Set(labels).count == labels.count, labels.allSatisfy({ (1...64).contains($0) }) else {
            try? engine.setCurrentDevice("system")
            return
        }
        let ports = labels.map { physicalPrefix + String($0) }.joined(separator: ",")
        if (try? engine.setCurrentDevice("system", connecting: ports)) == nil { try? engine.setCurrentDevice("system") }
    }
}
