import CAudioToolbox

// The C entry points of Audio Converter Services.

@_cdecl("AudioConverterNew")
public func audioConverterNew(_ inSourceFormat: UnsafePointer<AudioStreamBasicDescription>?,
                              _ inDestinationFormat: UnsafePointer<AudioStreamBasicDescription>?,
                              _ outAudioConverter: UnsafeMutablePointer<AudioConverterRef?>?) -> OSStatus {
    withStatus { try newConverter(inSourceFormat, inDestinationFormat, outAudioConverter) { _, _ in } }
}

/// AudioConverterNew's work: `check` sees both formats before the converter is made.
private func newConverter(_ inSourceFormat: UnsafePointer<AudioStreamBasicDescription>?,
                          _ inDestinationFormat: UnsafePointer<AudioStreamBasicDescription>?,
                          _ outAudioConverter: UnsafeMutablePointer<AudioConverterRef?>?,
                          check: (AudioStreamBasicDescription, AudioStreamBasicDescription) throws -> Void) throws {
    guard let inSourceFormat, let inDestinationFormat, let outAudioConverter else {
        throw AudioToolboxError(kAudio_ParamError, "NULL format or outAudioConverter")
    }
    outAudioConverter.pointee = nil
    try check(inSourceFormat.pointee, inDestinationFormat.pointee)
    let object = try AudioConverterObject(source: inSourceFormat.pointee, destination: inDestinationFormat.pointee)
    AudioConverterRegistry.add(object)
    outAudioConverter.pointee = object.ref
}

@_cdecl("AudioConverterDispose")
public func audioConverterDispose(_ inAudioConverter: AudioConverterRef?) -> OSStatus {
    withStatus { try AudioConverterRegistry.remove(inAudioConverter) }
}

@_cdecl("AudioConverterReset")
public func audioConverterReset(_ inAudioConverter: AudioConverterRef?) -> OSStatus {
    withStatus { try AudioConverterRegistry.object(inAudioConverter).reset() }
}

@_cdecl("AudioConverterGetPropertyInfo")
public func audioConverterGetPropertyInfo(_ inAudioConverter: AudioConverterRef?, _ inPropertyID: AudioConverterPropertyID,
                                          _ outSize: UnsafeMutablePointer<UInt32>?, _ outWritable: UnsafeMutablePointer<Bool>?) -> OSStatus {
    withStatus {
        let info = try AudioConverterRegistry.object(inAudioConverter).propertySize(inPropertyID)
        outSize?.pointee = info.size
        outWritable?.pointee = info.writable
    }
}

@_cdecl("AudioConverterGetProperty")
public func audioConverterGetProperty(_ inAudioConverter: AudioConverterRef?, _ inPropertyID: AudioConverterPropertyID,
                                      _ ioPropertyDataSize: UnsafeMutablePointer<UInt32>?, _ outPropertyData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let object = try AudioConverterRegistry.object(inAudioConverter)
        guard let ioPropertyDataSize else { throw AudioToolboxError(kAudio_ParamError, "NULL ioPropertyDataSize") }
        try object.getProperty(inPropertyID, PropertyIO(data: outPropertyData, size: ioPropertyDataSize,
                                                        sizeError: kAudioConverterErr_BadPropertySizeError))
    }
}

@_cdecl("AudioConverterSetProperty")
public func audioConverterSetProperty(_ inAudioConverter: AudioConverterRef?, _ inPropertyID: AudioConverterPropertyID,
                                      _ inPropertyDataSize: UInt32, _ inPropertyData: UnsafeRawPointer?) -> OSStatus {
    withStatus { try AudioConverterRegistry.object(inAudioConverter).setProperty(inPropertyID, inPropertyData, inPropertyDataSize) }
}

@_cdecl("AudioConverterConvertBuffer")
public func audioConverterConvertBuffer(_ inAudioConverter: AudioConverterRef?, _ inInputDataSize: UInt32, _ inInputData: UnsafeRawPointer?,
                                        _ ioOutputDataSize: UnsafeMutablePointer<UInt32>?, _ outOutputData: UnsafeMutableRawPointer?) -> OSStatus {
    withStatus {
        let object = try AudioConverterRegistry.object(inAudioConverter)
        guard let inInputData, let ioOutputDataSize, let outOutputData else { throw AudioToolboxError(kAudio_ParamError, "NULL data or size") }
        try object.convertBuffer(inInputDataSize, inInputData, ioOutputDataSize, outOutputData)
    }
}

@_cdecl("AudioConverterFillComplexBuffer")
public func audioConverterFillComplexBuffer(_ inAudioConverter: AudioConverterRef?, _ inInputDataProc: AudioConverterComplexInputDataProc?,
                                            _ inInputDataProcUserData: UnsafeMutableRawPointer?,
                                            _ ioOutputDataPacketSize: UnsafeMutablePointer<UInt32>?,
                                            _ outOutputData: UnsafeMutablePointer<AudioBufferList>?,
                                            _ outPacketDescription: UnsafeMutablePointer<AudioStreamPacketDescription>?) -> OSStatus {
    withStatus {
        let object = try AudioConverterRegistry.object(inAudioConverter)
        guard let inInputDataProc, let ioOutputDataPacketSize, let outOutputData else {
            throw AudioToolboxError(kAudio_ParamError, "NULL input proc, packet count or output buffer list")
        }
        try object.fill(inInputDataProc, inInputDataProcUserData, ioOutputDataPacketSize, outOutputData, outPacketDescription)
    }
}

@_cdecl("AudioConverterNewSpecific")
public func audioConverterNewSpecific(_ inSourceFormat: UnsafePointer<AudioStreamBasicDescription>?,
                                      _ inDestinationFormat: UnsafePointer<AudioStreamBasicDescription>?,
                                      _ inNumberClassDescriptions: UInt32, _ inClassDescriptions: UnsafePointer<AudioClassDescription>?,
                                      _ outAudioConverter: UnsafeMutablePointer<AudioConverterRef?>?) -> OSStatus {
    withStatus {
        try newConverter(inSourceFormat, inDestinationFormat, outAudioConverter) { source, destination in
            guard inNumberClassDescriptions > 0, let inClassDescriptions else {
                throw AudioToolboxError(kAudio_ParamError, "no class descriptions")
            }
            let classes = UnsafeBufferPointer(start: inClassDescriptions, count: Int(inNumberClassDescriptions))
            let usesCodec = codecFormat(source) != nil || codecFormat(destination) != nil
            // jaq's codecs are software: a list naming only hardware codecs names none of them.
            guard !usesCodec || classes.contains(where: { $0.mManufacturer != kAppleHardwareAudioCodecManufacturer }) else {
                throw AudioToolboxError(kAudioConverterErr_FormatNotSupported, "no hardware codecs (kAppleHardwareAudioCodecManufacturer)")
            }
        }
    }
}

@_cdecl("AudioConverterConvertComplexBuffer")
public func audioConverterConvertComplexBuffer(_ inAudioConverter: AudioConverterRef?, _ inNumberPCMFrames: UInt32,
                                               _ inInputData: UnsafePointer<AudioBufferList>?,
                                               _ outOutputData: UnsafeMutablePointer<AudioBufferList>?) -> OSStatus {
    withStatus {
        let object = try AudioConverterRegistry.object(inAudioConverter)
        guard let inInputData, let outOutputData else { throw AudioToolboxError(kAudio_ParamError, "NULL buffer list") }
        try object.convertComplex(Int(inNumberPCMFrames), UnsafeMutablePointer(mutating: inInputData), outOutputData)
    }
}
