"""The structure server-side apply needs of each built-in kind, from k8s.io/api v1.32.

Transcribed from the structured-merge-diff schema client-go v0.32 ships
(applyconfigurations/internal/internal.go), restricted to the types the served
kinds reach. One entry per named type: its fields, space-separated, each
`name:TYPE`, where TYPE is `s` (a scalar), `?` (untyped: deduced from the
value), `?a` (untyped and atomic), another entry's name, `[a]T` (atomic list),
`[s]T` (a set), `[m=k1,k2]T` (a list map keyed by k1, k2), `{}T` (a map) or
`{a}T` (an atomic map). `name:TYPE=V` gives a list-map key field's default. A
leading `!` marks an atomic struct; `*:TYPE` the type of fields not listed.
`apply_schema.py` reads it; nothing else should.
"""

from __future__ import annotations

BUILTIN_TYPES: dict[str, str] = {
    "AWSElasticBlockStoreVolumeSource": "fsType:s partition:s readOnly:s volumeID:s",
    "Affinity": (
        "nodeAffinity:NodeAffinity podAffinity:PodAffinity podAntiAffinity:PodAntiAffinity"
    ),
    "AppArmorProfile": "localhostProfile:s type:s",
    "AttachedVolume": "devicePath:s name:s",
    "AzureDiskVolumeSource": "cachingMode:s diskName:s diskURI:s fsType:s kind:s readOnly:s",
    "AzureFileVolumeSource": "readOnly:s secretName:s shareName:s",
    "CSIVolumeSource": (
        "driver:s fsType:s nodePublishSecretRef:LocalObjectReference readOnly:s "
        "volumeAttributes:{}s"
    ),
    "Capabilities": "add:[a]s drop:[a]s",
    "CephFSVolumeSource": (
        "monitors:[a]s path:s readOnly:s secretFile:s secretRef:LocalObjectReference user:s"
    ),
    "CinderVolumeSource": "fsType:s readOnly:s secretRef:LocalObjectReference volumeID:s",
    "ClientIPConfig": "timeoutSeconds:s",
    "ClusterTrustBundleProjection": (
        "labelSelector:meta.LabelSelector name:s optional:s path:s signerName:s"
    ),
    "ConfigMap": (
        "apiVersion:s binaryData:{}s data:{}s immutable:s kind:s metadata:meta.ObjectMeta"
    ),
    "ConfigMapEnvSource": "name:s optional:s",
    "ConfigMapKeySelector": "! key:s name:s optional:s",
    "ConfigMapNodeConfigSource": "kubeletConfigKey:s name:s namespace:s resourceVersion:s uid:s",
    "ConfigMapProjection": "items:[a]KeyToPath name:s optional:s",
    "ConfigMapVolumeSource": "defaultMode:s items:[a]KeyToPath name:s optional:s",
    "Container": (
        "args:[a]s command:[a]s env:[m=name]EnvVar envFrom:[a]EnvFromSource image:s "
        "imagePullPolicy:s lifecycle:Lifecycle livenessProbe:Probe name:s= "
        "ports:[m=containerPort,protocol]ContainerPort readinessProbe:Probe "
        "resizePolicy:[a]ContainerResizePolicy resources:ResourceRequirements restartPolicy:s "
        "securityContext:SecurityContext startupProbe:Probe stdin:s stdinOnce:s "
        "terminationMessagePath:s terminationMessagePolicy:s tty:s "
        "volumeDevices:[m=devicePath]VolumeDevice volumeMounts:[m=mountPath]VolumeMount "
        "workingDir:s"
    ),
    "ContainerImage": "names:[a]s sizeBytes:s",
    "ContainerPort": "containerPort:s=0 hostIP:s hostPort:s name:s protocol:s=TCP",
    "ContainerResizePolicy": "resourceName:s restartPolicy:s",
    "ContainerState": (
        "running:ContainerStateRunning terminated:ContainerStateTerminated "
        "waiting:ContainerStateWaiting"
    ),
    "ContainerStateRunning": "startedAt:s",
    "ContainerStateTerminated": (
        "containerID:s exitCode:s finishedAt:s message:s reason:s signal:s startedAt:s"
    ),
    "ContainerStateWaiting": "message:s reason:s",
    "ContainerStatus": (
        "allocatedResources:{}s allocatedResourcesStatus:[m=name]ResourceStatus containerID:s "
        "image:s imageID:s lastState:ContainerState name:s ready:s "
        "resources:ResourceRequirements restartCount:s started:s state:ContainerState "
        "user:ContainerUser volumeMounts:[m=mountPath]VolumeMountStatus"
    ),
    "ContainerUser": "linux:LinuxContainerUser",
    "DaemonEndpoint": "Port:s",
    "DownwardAPIProjection": "items:[a]DownwardAPIVolumeFile",
    "DownwardAPIVolumeFile": (
        "fieldRef:ObjectFieldSelector mode:s path:s resourceFieldRef:ResourceFieldSelector"
    ),
    "DownwardAPIVolumeSource": "defaultMode:s items:[a]DownwardAPIVolumeFile",
    "EmptyDirVolumeSource": "medium:s sizeLimit:s",
    "EnvFromSource": "configMapRef:ConfigMapEnvSource prefix:s secretRef:SecretEnvSource",
    "EnvVar": "name:s= value:s valueFrom:EnvVarSource",
    "EnvVarSource": (
        "configMapKeyRef:ConfigMapKeySelector fieldRef:ObjectFieldSelector "
        "resourceFieldRef:ResourceFieldSelector secretKeyRef:SecretKeySelector"
    ),
    "EphemeralContainer": (
        "args:[a]s command:[a]s env:[m=name]EnvVar envFrom:[a]EnvFromSource image:s "
        "imagePullPolicy:s lifecycle:Lifecycle livenessProbe:Probe name:s= "
        "ports:[m=containerPort,protocol]ContainerPort readinessProbe:Probe "
        "resizePolicy:[a]ContainerResizePolicy resources:ResourceRequirements restartPolicy:s "
        "securityContext:SecurityContext startupProbe:Probe stdin:s stdinOnce:s "
        "targetContainerName:s terminationMessagePath:s terminationMessagePolicy:s tty:s "
        "volumeDevices:[m=devicePath]VolumeDevice volumeMounts:[m=mountPath]VolumeMount "
        "workingDir:s"
    ),
    "EphemeralVolumeSource": "volumeClaimTemplate:PersistentVolumeClaimTemplate",
    "Event": (
        "action:s apiVersion:s count:s eventTime:s firstTimestamp:s "
        "involvedObject:ObjectReference kind:s lastTimestamp:s message:s "
        "metadata:meta.ObjectMeta reason:s related:ObjectReference reportingComponent:s "
        "reportingInstance:s series:EventSeries source:EventSource type:s"
    ),
    "EventSeries": "count:s lastObservedTime:s",
    "EventSource": "component:s host:s",
    "ExecAction": "command:[a]s",
    "FCVolumeSource": "fsType:s lun:s readOnly:s targetWWNs:[a]s wwids:[a]s",
    "FlexVolumeSource": "driver:s fsType:s options:{}s readOnly:s secretRef:LocalObjectReference",
    "FlockerVolumeSource": "datasetName:s datasetUUID:s",
    "GCEPersistentDiskVolumeSource": "fsType:s partition:s pdName:s readOnly:s",
    "GRPCAction": "port:s service:s",
    "GitRepoVolumeSource": "directory:s repository:s revision:s",
    "GlusterfsVolumeSource": "endpoints:s path:s readOnly:s",
    "HTTPGetAction": "host:s httpHeaders:[a]HTTPHeader path:s port:s scheme:s",
    "HTTPHeader": "name:s value:s",
    "HostAlias": "hostnames:[a]s ip:s=",
    "HostIP": "ip:s",
    "HostPathVolumeSource": "path:s type:s",
    "ISCSIVolumeSource": (
        "chapAuthDiscovery:s chapAuthSession:s fsType:s initiatorName:s iqn:s "
        "iscsiInterface:s lun:s portals:[a]s readOnly:s secretRef:LocalObjectReference "
        "targetPortal:s"
    ),
    "ImageVolumeSource": "pullPolicy:s reference:s",
    "KeyToPath": "key:s mode:s path:s",
    "Lifecycle": "postStart:LifecycleHandler preStop:LifecycleHandler",
    "LifecycleHandler": (
        "exec:ExecAction httpGet:HTTPGetAction sleep:SleepAction tcpSocket:TCPSocketAction"
    ),
    "LinuxContainerUser": "gid:s supplementalGroups:[a]s uid:s",
    "LoadBalancerIngress": "hostname:s ip:s ipMode:s ports:[a]PortStatus",
    "LoadBalancerStatus": "ingress:[a]LoadBalancerIngress",
    "LocalObjectReference": "! name:s=",
    "NFSVolumeSource": "path:s readOnly:s server:s",
    "Namespace": (
        "apiVersion:s kind:s metadata:meta.ObjectMeta spec:NamespaceSpec "
        "status:NamespaceStatus"
    ),
    "NamespaceCondition": "lastTransitionTime:s message:s reason:s status:s type:s=",
    "NamespaceSpec": "finalizers:[a]s",
    "NamespaceStatus": "conditions:[m=type]NamespaceCondition phase:s",
    "Node": "apiVersion:s kind:s metadata:meta.ObjectMeta spec:NodeSpec status:NodeStatus",
    "NodeAddress": "address:s type:s=",
    "NodeAffinity": (
        "preferredDuringSchedulingIgnoredDuringExecution:[a]PreferredSchedulingTerm "
        "requiredDuringSchedulingIgnoredDuringExecution:NodeSelector"
    ),
    "NodeCondition": (
        "lastHeartbeatTime:s lastTransitionTime:s message:s reason:s status:s type:s="
    ),
    "NodeConfigSource": "configMap:ConfigMapNodeConfigSource",
    "NodeConfigStatus": (
        "active:NodeConfigSource assigned:NodeConfigSource error:s "
        "lastKnownGood:NodeConfigSource"
    ),
    "NodeDaemonEndpoints": "kubeletEndpoint:DaemonEndpoint",
    "NodeFeatures": "supplementalGroupsPolicy:s",
    "NodeRuntimeHandler": "features:NodeRuntimeHandlerFeatures name:s",
    "NodeRuntimeHandlerFeatures": "recursiveReadOnlyMounts:s userNamespaces:s",
    "NodeSelector": "! nodeSelectorTerms:[a]NodeSelectorTerm",
    "NodeSelectorRequirement": "key:s operator:s values:[a]s",
    "NodeSelectorTerm": (
        "! matchExpressions:[a]NodeSelectorRequirement matchFields:[a]NodeSelectorRequirement"
    ),
    "NodeSpec": (
        "configSource:NodeConfigSource externalID:s podCIDR:s podCIDRs:[s]s providerID:s "
        "taints:[a]Taint unschedulable:s"
    ),
    "NodeStatus": (
        "addresses:[m=type]NodeAddress allocatable:{}s capacity:{}s "
        "conditions:[m=type]NodeCondition config:NodeConfigStatus "
        "daemonEndpoints:NodeDaemonEndpoints features:NodeFeatures images:[a]ContainerImage "
        "nodeInfo:NodeSystemInfo phase:s runtimeHandlers:[a]NodeRuntimeHandler "
        "volumesAttached:[a]AttachedVolume volumesInUse:[a]s"
    ),
    "NodeSystemInfo": (
        "architecture:s bootID:s containerRuntimeVersion:s kernelVersion:s kubeProxyVersion:s "
        "kubeletVersion:s machineID:s operatingSystem:s osImage:s systemUUID:s"
    ),
    "ObjectFieldSelector": "! apiVersion:s fieldPath:s",
    "ObjectReference": (
        "! apiVersion:s fieldPath:s kind:s name:s namespace:s resourceVersion:s uid:s"
    ),
    "PersistentVolumeClaimSpec": (
        "accessModes:[a]s dataSource:TypedLocalObjectReference "
        "dataSourceRef:TypedObjectReference resources:VolumeResourceRequirements "
        "selector:meta.LabelSelector storageClassName:s volumeAttributesClassName:s "
        "volumeMode:s volumeName:s"
    ),
    "PersistentVolumeClaimTemplate": "metadata:meta.ObjectMeta spec:PersistentVolumeClaimSpec",
    "PersistentVolumeClaimVolumeSource": "claimName:s readOnly:s",
    "PhotonPersistentDiskVolumeSource": "fsType:s pdID:s",
    "Pod": "apiVersion:s kind:s metadata:meta.ObjectMeta spec:PodSpec status:PodStatus",
    "PodAffinity": (
        "preferredDuringSchedulingIgnoredDuringExecution:[a]WeightedPodAffinityTerm "
        "requiredDuringSchedulingIgnoredDuringExecution:[a]PodAffinityTerm"
    ),
    "PodAffinityTerm": (
        "labelSelector:meta.LabelSelector matchLabelKeys:[a]s mismatchLabelKeys:[a]s "
        "namespaceSelector:meta.LabelSelector namespaces:[a]s topologyKey:s"
    ),
    "PodAntiAffinity": (
        "preferredDuringSchedulingIgnoredDuringExecution:[a]WeightedPodAffinityTerm "
        "requiredDuringSchedulingIgnoredDuringExecution:[a]PodAffinityTerm"
    ),
    "PodCondition": "lastProbeTime:s lastTransitionTime:s message:s reason:s status:s type:s=",
    "PodDNSConfig": "nameservers:[a]s options:[a]PodDNSConfigOption searches:[a]s",
    "PodDNSConfigOption": "name:s value:s",
    "PodIP": "ip:s=",
    "PodOS": "name:s",
    "PodReadinessGate": "conditionType:s",
    "PodResourceClaim": "name:s= resourceClaimName:s resourceClaimTemplateName:s",
    "PodResourceClaimStatus": "name:s= resourceClaimName:s",
    "PodSchedulingGate": "name:s=",
    "PodSecurityContext": (
        "appArmorProfile:AppArmorProfile fsGroup:s fsGroupChangePolicy:s runAsGroup:s "
        "runAsNonRoot:s runAsUser:s seLinuxChangePolicy:s seLinuxOptions:SELinuxOptions "
        "seccompProfile:SeccompProfile supplementalGroups:[a]s supplementalGroupsPolicy:s "
        "sysctls:[a]Sysctl windowsOptions:WindowsSecurityContextOptions"
    ),
    "PodSpec": (
        "activeDeadlineSeconds:s affinity:Affinity automountServiceAccountToken:s "
        "containers:[m=name]Container dnsConfig:PodDNSConfig dnsPolicy:s enableServiceLinks:s "
        "ephemeralContainers:[m=name]EphemeralContainer hostAliases:[m=ip]HostAlias hostIPC:s "
        "hostNetwork:s hostPID:s hostUsers:s hostname:s "
        "imagePullSecrets:[m=name]LocalObjectReference initContainers:[m=name]Container "
        "nodeName:s nodeSelector:{a}s os:PodOS overhead:{}s preemptionPolicy:s priority:s "
        "priorityClassName:s readinessGates:[a]PodReadinessGate "
        "resourceClaims:[m=name]PodResourceClaim resources:ResourceRequirements "
        "restartPolicy:s runtimeClassName:s schedulerName:s "
        "schedulingGates:[m=name]PodSchedulingGate securityContext:PodSecurityContext "
        "serviceAccount:s serviceAccountName:s setHostnameAsFQDN:s shareProcessNamespace:s "
        "subdomain:s terminationGracePeriodSeconds:s tolerations:[a]Toleration "
        "topologySpreadConstraints:[m=topologyKey,whenUnsatisfiable]TopologySpreadConstraint "
        "volumes:[m=name]Volume"
    ),
    "PodTemplateSpec": "metadata:meta.ObjectMeta spec:PodSpec",
    "PodStatus": (
        "conditions:[m=type]PodCondition containerStatuses:[a]ContainerStatus "
        "ephemeralContainerStatuses:[a]ContainerStatus hostIP:s hostIPs:[a]HostIP "
        "initContainerStatuses:[a]ContainerStatus message:s nominatedNodeName:s phase:s "
        "podIP:s podIPs:[m=ip]PodIP qosClass:s reason:s resize:s "
        "resourceClaimStatuses:[m=name]PodResourceClaimStatus startTime:s"
    ),
    "PortStatus": "error:s port:s protocol:s",
    "PortworxVolumeSource": "fsType:s readOnly:s volumeID:s",
    "PreferredSchedulingTerm": "preference:NodeSelectorTerm weight:s",
    "Probe": (
        "exec:ExecAction failureThreshold:s grpc:GRPCAction httpGet:HTTPGetAction "
        "initialDelaySeconds:s periodSeconds:s successThreshold:s tcpSocket:TCPSocketAction "
        "terminationGracePeriodSeconds:s timeoutSeconds:s"
    ),
    "ProjectedVolumeSource": "defaultMode:s sources:[a]VolumeProjection",
    "QuobyteVolumeSource": "group:s readOnly:s registry:s tenant:s user:s volume:s",
    "RBDVolumeSource": (
        "fsType:s image:s keyring:s monitors:[a]s pool:s readOnly:s "
        "secretRef:LocalObjectReference user:s"
    ),
    "ResourceClaim": "name:s= request:s",
    "ResourceFieldSelector": "! containerName:s divisor:s resource:s",
    "ResourceHealth": "health:s resourceID:s=",
    "ResourceRequirements": "claims:[m=name]ResourceClaim limits:{}s requests:{}s",
    "ResourceStatus": "name:s= resources:[m=resourceID]ResourceHealth",
    "SELinuxOptions": "level:s role:s type:s user:s",
    "ScaleIOVolumeSource": (
        "fsType:s gateway:s protectionDomain:s readOnly:s secretRef:LocalObjectReference "
        "sslEnabled:s storageMode:s storagePool:s system:s volumeName:s"
    ),
    "SeccompProfile": "localhostProfile:s type:s",
    "Secret": (
        "apiVersion:s data:{}s immutable:s kind:s metadata:meta.ObjectMeta stringData:{}s "
        "type:s"
    ),
    "SecretEnvSource": "name:s optional:s",
    "SecretKeySelector": "! key:s name:s optional:s",
    "SecretProjection": "items:[a]KeyToPath name:s optional:s",
    "SecretVolumeSource": "defaultMode:s items:[a]KeyToPath optional:s secretName:s",
    "SecurityContext": (
        "allowPrivilegeEscalation:s appArmorProfile:AppArmorProfile capabilities:Capabilities "
        "privileged:s procMount:s readOnlyRootFilesystem:s runAsGroup:s runAsNonRoot:s "
        "runAsUser:s seLinuxOptions:SELinuxOptions seccompProfile:SeccompProfile "
        "windowsOptions:WindowsSecurityContextOptions"
    ),
    "Service": (
        "apiVersion:s kind:s metadata:meta.ObjectMeta spec:ServiceSpec status:ServiceStatus"
    ),
    "ServiceAccountTokenProjection": "audience:s expirationSeconds:s path:s",
    "ServicePort": "appProtocol:s name:s nodePort:s port:s=0 protocol:s=TCP targetPort:s",
    "ServiceSpec": (
        "allocateLoadBalancerNodePorts:s clusterIP:s clusterIPs:[a]s externalIPs:[a]s "
        "externalName:s externalTrafficPolicy:s healthCheckNodePort:s internalTrafficPolicy:s "
        "ipFamilies:[a]s ipFamilyPolicy:s loadBalancerClass:s loadBalancerIP:s "
        "loadBalancerSourceRanges:[a]s ports:[m=port,protocol]ServicePort "
        "publishNotReadyAddresses:s selector:{a}s sessionAffinity:s "
        "sessionAffinityConfig:SessionAffinityConfig trafficDistribution:s type:s"
    ),
    "ServiceStatus": "conditions:[m=type]meta.Condition loadBalancer:LoadBalancerStatus",
    "SessionAffinityConfig": "clientIP:ClientIPConfig",
    "SleepAction": "seconds:s",
    "StorageOSVolumeSource": (
        "fsType:s readOnly:s secretRef:LocalObjectReference volumeName:s volumeNamespace:s"
    ),
    "Sysctl": "name:s value:s",
    "TCPSocketAction": "host:s port:s",
    "Taint": "effect:s key:s timeAdded:s value:s",
    "Toleration": "effect:s key:s operator:s tolerationSeconds:s value:s",
    "TopologySpreadConstraint": (
        "labelSelector:meta.LabelSelector matchLabelKeys:[a]s maxSkew:s minDomains:s "
        "nodeAffinityPolicy:s nodeTaintsPolicy:s topologyKey:s= whenUnsatisfiable:s="
    ),
    "TypedLocalObjectReference": "! apiGroup:s kind:s name:s",
    "TypedObjectReference": "apiGroup:s kind:s name:s namespace:s",
    "Volume": (
        "awsElasticBlockStore:AWSElasticBlockStoreVolumeSource "
        "azureDisk:AzureDiskVolumeSource azureFile:AzureFileVolumeSource "
        "cephfs:CephFSVolumeSource cinder:CinderVolumeSource configMap:ConfigMapVolumeSource "
        "csi:CSIVolumeSource downwardAPI:DownwardAPIVolumeSource "
        "emptyDir:EmptyDirVolumeSource ephemeral:EphemeralVolumeSource fc:FCVolumeSource "
        "flexVolume:FlexVolumeSource flocker:FlockerVolumeSource "
        "gcePersistentDisk:GCEPersistentDiskVolumeSource gitRepo:GitRepoVolumeSource "
        "glusterfs:GlusterfsVolumeSource hostPath:HostPathVolumeSource "
        "image:ImageVolumeSource iscsi:ISCSIVolumeSource name:s= nfs:NFSVolumeSource "
        "persistentVolumeClaim:PersistentVolumeClaimVolumeSource "
        "photonPersistentDisk:PhotonPersistentDiskVolumeSource "
        "portworxVolume:PortworxVolumeSource projected:ProjectedVolumeSource "
        "quobyte:QuobyteVolumeSource rbd:RBDVolumeSource scaleIO:ScaleIOVolumeSource "
        "secret:SecretVolumeSource storageos:StorageOSVolumeSource "
        "vsphereVolume:VsphereVirtualDiskVolumeSource"
    ),
    "VolumeDevice": "devicePath:s= name:s",
    "VolumeMount": (
        "mountPath:s= mountPropagation:s name:s readOnly:s recursiveReadOnly:s subPath:s "
        "subPathExpr:s"
    ),
    "VolumeMountStatus": "mountPath:s= name:s readOnly:s recursiveReadOnly:s",
    "VolumeProjection": (
        "clusterTrustBundle:ClusterTrustBundleProjection configMap:ConfigMapProjection "
        "downwardAPI:DownwardAPIProjection secret:SecretProjection "
        "serviceAccountToken:ServiceAccountTokenProjection"
    ),
    "VolumeResourceRequirements": "limits:{}s requests:{}s",
    "VsphereVirtualDiskVolumeSource": (
        "fsType:s storagePolicyID:s storagePolicyName:s volumePath:s"
    ),
    "WeightedPodAffinityTerm": "podAffinityTerm:PodAffinityTerm weight:s",
    "WindowsSecurityContextOptions": (
        "gmsaCredentialSpec:s gmsaCredentialSpecName:s hostProcess:s runAsUserName:s"
    ),
    "apps.ControllerRevision": "apiVersion:s data:?a kind:s metadata:meta.ObjectMeta revision:s",
    "ReplicationController": (
        "apiVersion:s kind:s metadata:meta.ObjectMeta spec:ReplicationControllerSpec "
        "status:ReplicationControllerStatus"
    ),
    "ReplicationControllerCondition": (
        "lastTransitionTime:s message:s reason:s status:s type:s"
    ),
    "ReplicationControllerSpec": (
        "minReadySeconds:s replicas:s selector:{a}s template:PodTemplateSpec"
    ),
    "ReplicationControllerStatus": (
        "availableReplicas:s conditions:[m=type]ReplicationControllerCondition "
        "fullyLabeledReplicas:s observedGeneration:s readyReplicas:s replicas:s"
    ),
    "apps.Deployment": (
        "apiVersion:s kind:s metadata:meta.ObjectMeta spec:apps.DeploymentSpec "
        "status:apps.DeploymentStatus"
    ),
    "apps.DeploymentCondition": (
        "lastTransitionTime:s lastUpdateTime:s message:s reason:s status:s type:s"
    ),
    "apps.DeploymentSpec": (
        "minReadySeconds:s paused:s progressDeadlineSeconds:s replicas:s revisionHistoryLimit:s "
        "selector:meta.LabelSelector strategy:apps.DeploymentStrategy template:PodTemplateSpec"
    ),
    "apps.DeploymentStatus": (
        "availableReplicas:s collisionCount:s conditions:[m=type]apps.DeploymentCondition "
        "observedGeneration:s readyReplicas:s replicas:s unavailableReplicas:s updatedReplicas:s"
    ),
    "apps.DeploymentStrategy": "rollingUpdate:apps.RollingUpdateDeployment type:s",
    "apps.ReplicaSet": (
        "apiVersion:s kind:s metadata:meta.ObjectMeta spec:apps.ReplicaSetSpec "
        "status:apps.ReplicaSetStatus"
    ),
    "apps.ReplicaSetCondition": "lastTransitionTime:s message:s reason:s status:s type:s",
    "apps.ReplicaSetSpec": (
        "minReadySeconds:s replicas:s selector:meta.LabelSelector template:PodTemplateSpec"
    ),
    "apps.ReplicaSetStatus": (
        "availableReplicas:s conditions:[m=type]apps.ReplicaSetCondition fullyLabeledReplicas:s "
        "observedGeneration:s readyReplicas:s replicas:s"
    ),
    "apps.RollingUpdateDeployment": "maxSurge:s maxUnavailable:s",
    "batch.CronJob": (
        "apiVersion:s kind:s metadata:meta.ObjectMeta spec:batch.CronJobSpec "
        "status:batch.CronJobStatus"
    ),
    "batch.CronJobSpec": (
        "concurrencyPolicy:s failedJobsHistoryLimit:s jobTemplate:batch.JobTemplateSpec "
        "schedule:s startingDeadlineSeconds:s successfulJobsHistoryLimit:s suspend:s timeZone:s"
    ),
    "batch.CronJobStatus": "active:[a]ObjectReference lastScheduleTime:s lastSuccessfulTime:s",
    "batch.Job": (
        "apiVersion:s kind:s metadata:meta.ObjectMeta spec:batch.JobSpec status:batch.JobStatus"
    ),
    "batch.JobCondition": (
        "lastProbeTime:s lastTransitionTime:s message:s reason:s status:s type:s"
    ),
    "batch.JobSpec": (
        "activeDeadlineSeconds:s backoffLimit:s backoffLimitPerIndex:s completionMode:s "
        "completions:s managedBy:s manualSelector:s maxFailedIndexes:s parallelism:s "
        "podFailurePolicy:batch.PodFailurePolicy podReplacementPolicy:s "
        "selector:meta.LabelSelector successPolicy:batch.SuccessPolicy suspend:s "
        "template:PodTemplateSpec ttlSecondsAfterFinished:s"
    ),
    "batch.JobStatus": (
        "active:s completedIndexes:s completionTime:s conditions:[a]batch.JobCondition failed:s "
        "failedIndexes:s ready:s startTime:s succeeded:s terminating:s "
        "uncountedTerminatedPods:batch.UncountedTerminatedPods"
    ),
    "batch.JobTemplateSpec": "metadata:meta.ObjectMeta spec:batch.JobSpec",
    "batch.PodFailurePolicy": "rules:[a]batch.PodFailurePolicyRule",
    "batch.PodFailurePolicyOnExitCodesRequirement": "containerName:s operator:s values:[s]s",
    "batch.PodFailurePolicyOnPodConditionsPattern": "status:s type:s",
    "batch.PodFailurePolicyRule": (
        "action:s onExitCodes:batch.PodFailurePolicyOnExitCodesRequirement "
        "onPodConditions:[a]batch.PodFailurePolicyOnPodConditionsPattern"
    ),
    "batch.SuccessPolicy": "rules:[a]batch.SuccessPolicyRule",
    "batch.SuccessPolicyRule": "succeededCount:s succeededIndexes:s",
    "batch.UncountedTerminatedPods": "failed:[s]s succeeded:[s]s",
    "coordination.Lease": (
        "apiVersion:s kind:s metadata:meta.ObjectMeta spec:coordination.LeaseSpec"
    ),
    "coordination.LeaseSpec": (
        "acquireTime:s holderIdentity:s leaseDurationSeconds:s leaseTransitions:s "
        "preferredHolder:s renewTime:s strategy:s"
    ),
    "scheduling.PriorityClass": (
        "apiVersion:s description:s globalDefault:s kind:s metadata:meta.ObjectMeta "
        "preemptionPolicy:s value:s"
    ),
    "meta.Condition": (
        "lastTransitionTime:s message:s observedGeneration:s reason:s status:s type:s="
    ),
    "meta.FieldsV1": "*:?",
    "meta.LabelSelector": "! matchExpressions:[a]meta.LabelSelectorRequirement matchLabels:{}s",
    "meta.LabelSelectorRequirement": "key:s operator:s values:[a]s",
    "meta.ManagedFieldsEntry": (
        "apiVersion:s fieldsType:s fieldsV1:meta.FieldsV1 manager:s operation:s subresource:s "
        "time:s"
    ),
    "meta.ObjectMeta": (
        "annotations:{}s creationTimestamp:s deletionGracePeriodSeconds:s deletionTimestamp:s "
        "finalizers:[s]s generateName:s generation:s labels:{}s "
        "managedFields:[a]meta.ManagedFieldsEntry name:s namespace:s "
        "ownerReferences:[m=uid]meta.OwnerReference resourceVersion:s selfLink:s uid:s"
    ),
    "meta.OwnerReference": "! apiVersion:s blockOwnerDeletion:s controller:s kind:s name:s uid:s=",
}
