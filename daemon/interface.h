/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The varlink interface io.svff: its definition text (returned by
 * org.varlink.service.GetInterfaceDescription, and the reference for
 * every method and error) and the error names. */

#define SVFF_INTERFACE "io.svff"

#define SVFF_ERROR_NO_SUCH_DEVICE "io.svff.NoSuchDevice"
#define SVFF_ERROR_NOT_SRIOV "io.svff.NotSriov"
#define SVFF_ERROR_NOT_MANAGED "io.svff.NotManaged"
/* A malformed or missing call parameter (wrong type, not a PCI address,
 * not a known value) and a call the caller may not make are answered
 * with the standard errors every varlink client knows; they declare no
 * message, so the explanation goes to svffd's debug log. A well-formed
 * request the state refuses is an io.svff error with its message. */
#define SVFF_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
#define SVFF_ERROR_DEVICE_BUSY "io.svff.DeviceBusy"
#define SVFF_ERROR_DEVICE_REFUSED "io.svff.DeviceRefused"
#define SVFF_ERROR_TOO_MANY_VFS "io.svff.TooManyVfs"
#define SVFF_ERROR_NO_DRIVER "io.svff.NoDriver"
#define SVFF_ERROR_TIMEOUT "io.svff.Timeout"
#define SVFF_ERROR_PERMISSION_DENIED "org.varlink.service.PermissionDenied"
#define SVFF_ERROR_OPERATION_IN_PROGRESS "io.svff.OperationInProgress"
#define SVFF_ERROR_OPERATION_FAILED "io.svff.OperationFailed"
#define SVFF_ERROR_STORE "io.svff.StoreError"
#define SVFF_ERROR_SHUTTING_DOWN "io.svff.ShuttingDown"
#define SVFF_ERROR_INTERNAL "io.svff.InternalError"
#define SVFF_ERROR_NO_SUCH_DOMAIN "io.svff.NoSuchDomain"
#define SVFF_ERROR_ALREADY_ASSIGNED "io.svff.AlreadyAssigned"
#define SVFF_ERROR_NOT_ASSIGNED "io.svff.NotAssigned"
#define SVFF_ERROR_NOT_ON_VFIO "io.svff.NotOnVfio"
#define SVFF_ERROR_GROUP_SHARED "io.svff.GroupShared"
#define SVFF_ERROR_GROUP_NOT_VIABLE "io.svff.GroupNotViable"
#define SVFF_ERROR_NO_FREE_VF "io.svff.NoFreeVf"
#define SVFF_ERROR_GUEST_ADDRESS_TAKEN "io.svff.GuestAddressTaken"
#define SVFF_ERROR_GUEST_NOT_RELEASED "io.svff.GuestNotReleased"
#define SVFF_ERROR_NO_HOTPLUG "io.svff.NoHotplug"
#define SVFF_ERROR_HYPERVISOR_UNAVAILABLE "io.svff.HypervisorUnavailable"
#define SVFF_ERROR_HYPERVISOR "io.svff.HypervisorError"
#define SVFF_ERROR_RECONF_FAILED "io.svff.ReconfFailed"
#define SVFF_ERROR_ASSIGNMENTS_WOULD_BE_LOST "io.svff.AssignmentsWouldBeLost"
#define SVFF_ERROR_DOMAIN_NOT_RUNNING "io.svff.DomainNotRunning"
#define SVFF_ERROR_DOMAIN_TRANSIENT "io.svff.DomainTransient"
#define SVFF_ERROR_NO_DEVICE_CLASS "io.svff.NoDeviceClass"
#define SVFF_ERROR_NOT_ATTACHED "io.svff.NotAttached"
#define SVFF_ERROR_NOT_PAUSED "io.svff.NotPaused"
#define SVFF_ERROR_NO_POLICY "io.svff.NoPolicy"
#define SVFF_ERROR_CONFIG_INVALID "io.svff.ConfigInvalid"
#define SVFF_ERROR_NOT_ALLOWED "io.svff.NotAllowed"
#define SVFF_ERROR_REPROGRAM_INTERRUPTED "io.svff.ReprogramInterrupted"
#define SVFF_ERROR_INVALID_IMAGE "io.svff.InvalidImage"
#define SVFF_ERROR_NO_FLASH_HOOK "io.svff.NoFlashHook"

#define VARLINK_ERROR_EXPECTED_MORE "org.varlink.service.ExpectedMore"

extern const char svff_interface_description[];
extern const char varlink_service_interface_description[];
