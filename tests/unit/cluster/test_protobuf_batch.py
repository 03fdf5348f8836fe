"""Decoding batch/v1 Job and CronJob and core/v1 Pod and PodTemplate protobuf bodies.

Their field tables are generated (`tools/protobuf_tables_from_proto.py`). Three bodies are
the exact bytes kubectl 1.32.4 sent (zlib-compressed, base64) for `kubectl create job|cronjob
... --save-config`, which also puts Go's own JSON of the object into the body's
last-applied annotation: the decoded object must equal it. The rest are built here field by
field, from the numbers of generated.proto, and a property test round-trips random Jobs.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.cluster.apiserver.encoding import (
    protobuf,
    protobuf_tables_batch,
    protobuf_tables_core,
)
from engine.cluster.apiserver.encoding.protobuf import (
    ProtobufError,
    UnsupportedKindError,
    decode_request,
)
from engine.cluster.apiserver.encoding.protobuf_tables import Field, Table
from tests.unit.cluster.test_protobuf import entry, envelope, ld, num, varint

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def quantity(value: str) -> bytes:
    """A resource.Quantity message: its string in field 1."""
    return ld(1, value)


def port(value: int | str) -> bytes:
    """An IntOrString message: type 0 and intVal, or type 1 and strVal."""
    return num(1, 0) + num(2, value) if isinstance(value, int) else num(1, 1) + ld(3, value)


def without_nulls(value: Any) -> Any:
    """Go's JSON with its nulls (the zero creationTimestamp) left out, as the decoder does."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def kubectl_body(compressed: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The decoded object of a captured body, and the JSON Go wrote for it (nulls left out)."""
    obj = decode_request(zlib.decompress(base64.b64decode(compressed)))
    go_json = json.loads(obj["metadata"]["annotations"].pop(LAST_APPLIED))
    if not obj["metadata"]["annotations"]:
        del obj["metadata"]["annotations"]
    return obj, without_nulls(go_json)


# kubectl's own bodies

# kubectl create job hello --image=busybox --save-config -- echo hi
CREATE_JOB = (
    "eNqFUb1OwzAY/JJSUWUBZcyEPKGqf3SqMjJ2QIAQQqqQcNKPxtSOI9upqKpIiAkxMTMw8Ci8Ak/AzEtgp1QCMTDZvr"
    "vv7mzPRxqCnaCVUJNm/cVB2BjLJPxoBJ9+0MyQcxlCBATaMIQRHELy7geDeZlganjPrSpHg7rHZJ9Tbbq0KDjDaTeV"
    "+TWblYoaJvPwxV+ROcunJCbWnnQILdg5Km05C22yLS7Q0Ck1lMQrklOBlq1LWCpVWJudMYHaUFGQOC85rzpEF5i6AY"
    "Oi4NSg2/80+n/StjWU5bYRiSd/kpmgM3dOSr1M5K3rIoWg7joTgmnmNBkjlx2iUMtSpWhtVlW1BgxV5lhyli6txREu"
    "UJGqctmGmnItDMLZEIPdAH6/dXgS9jafsP0dHm25wMjPWNsqbkDBnQcPHjx58OpB1KwDhpYawylcwBVkcO/BowfPHr"
    "xZQWsP9mEAcR30BR9xmMQ="
)
# kubectl create cronjob tick --image=busybox --schedule='*/5 * * * *' --restart=OnFailure
#     --save-config -- date
CREATE_CRONJOB = (
    "eNqlUcFKAzEUfEsL1XiR1VNPkptLtVoQpEcFD14UERFE8G02bWOzyZJkRSkVEQTxomePfoZH/8C/8DNMbBUpigeTQ8"
    "ibmTeTl/66BTJHplJ0rNc8W41rm0arbZ3Gb1XyWiFVJ1g/hjpQSKAF67AB6XOFrPTLlDMnl8NpFHfcLgvdlGjdEhaF"
    "FDxbYlp1RLc06IRW8U1lQPtCZbRNxw60QbEQB9xYj/vyZwRfz7nDDB3S9oAqzLlHQw6PMMM/+u2LnFuHeUHbqpRy2K"
    "C24CzwLevxrJRBkzTXFpLR9tJTne7zvJDoeOD9x8P90udvpR+KQ6H8o2n7aNJY5NgN17S0F6k+D1F0nmMY2hHNgt9x"
    "gxpudWkY9w0Gw+Go4NC4XS0Fu/DqHbWFQpaG02FY3tuhK0d0Et9HZObbXOqQXJL5n7457rQyMktgorobL47ZtXHMej"
    "VESzx4CgauIriN4CGCpwjq019ZWh7ehj04hBPowXUEdxE8RvDiSR/93wGMccGt"
)
# kubectl create job fromrich --from=cronjob/rich --save-config, the CronJob served by a stub
# whose job template sets nearly every field of JobSpec and PodSpec: exit-code and pod-condition
# rules, success policy, affinities, tolerations, spread constraints, a dozen volume sources,
# probes of each handler, lifecycle hooks, security contexts, env from fields, resources,
# config maps and secrets, quantities, claims and zero pointers all over.
CREATE_JOB_FROM_CRONJOB = (
    "eNqlWk1sHEd27poZ/pUtiWpbMTNxskoniyhc/syMLIGZLGDzV6ZMShOS3jgyBG1Pd81Miz3d7a7u4VACA0cIkGD3Ii"
    "SXwLkJezBy3KODXPaUY7CnnDeXxQIBghxzynuvqme6hyOtk4UAit1V9er9v++95umGNPg1Pt+2E6e3Pqib5fth2/zn"
    "Q/6P3+fznTjsx57TM42qYRnLRsPYMLaMR7OcJSart+F/22Tt9vf47ztxGDwN22unaVvEgUiEXPPCdS+QiR0knp0Ic7"
    "ZvB6ntt1/9Ka/hLifxJ3b7tkxW7SjyPeGuOmHQ8bppbCdeGJj/2XxunXqBazUtYM9asezI+4GIJazBq4x3eN8Xie3a"
    "iW3BgcDuC1jNhIBVJxZE78TrC+CsH1nNIPX9Fcu328KXeCiBE3XrAm4IgjCh3fTexnuIxK8RFPYpSZFIeBaI+Eh0RC"
    "wCRwChz5+/lnUt3zZcoGTU/GveUw9XU9wJukni0PdFbDWTOBUXj+EqGQkHGY3s2IYl35N9q1nDzf3IF1qO2yCXk3gD"
    "sSNs1/cCcSyAmAsr9RrsjUJ3z/b8NBat0Pecc6QXp37GuJMopnGPYjEMdodesh26gpSEjNlANX6gWO/DA+6KBNgxBG"
    "6tfXwe2H5KNOsrjZUPGo8vLlZy1Pe7QRgLIt4K3W1gz9PcAw/JeYSEdzwZpxGZ0o67IoHdYIAkhU3WCWjEApWQUlIH"
    "1C6nSUNLwhXufuCKIb60aqsNa2W8sB2mAbhDjSi1bec07HQOvL6XkF7zL1oiJiqgRnBBe4gKyhGG3VL44PGoguewAW"
    "x+MPI4mXkcvd8dRjFwPBL4VADf1umbtAi+CexYSmLle8ej6zq2L8WKlQjwAvLO54UY+RYRofnLudgg9NO+VqN2UqfT"
    "VY4JQXtoR7nwc/qw4MH9k/JEdtKDXyOMWnAgUvSK5YqOnfrJIb35oFFDuZFBiCclCzmLpi2BH9QtSJEQq/Sbdj5pTV"
    "Br3Lmbp0aRkyOW9JEV0FNyvuMpQwnXSyGKrEPRD+NzvMp7JrQLWPV7npU/TyeLFPLLPaTeC2XSIrmfZ/KvD+G9dusC"
    "vWiAwkWYKmQiguQHpPVt3/b6ZDn8RYuKG8GQ7sPAP78smAsZB3UByejMjt3N1j6eH5tEM6ItvmJ1POG7kLRwF/2uOB"
    "75zZreSXfow06UEg8yTGNH7OUovCYnZFvxYlSoXFMkXG/gSXLyeh9ueFzQSBw+RZXAf+DdwiWTExUd0iIeeI7YdByM"
    "3JPwVASUulPXw/QLFDBSxDDyVFkZJb/bdyn7KVESOkf3On4Kqo8ho8hkKw1cn+JHet2xOKgw0sfx6yNc1Q6MoAlfHt"
    "3ZVveNPTlz8MaU4LGt/DnQ0JSwKThmhPUDfoo+ZBB/HMHkSyf//8wgLmUGm9LtoaoHn1tH4JN/HgP/D1H9j8dWp+Ox"
    "+AISWKKSDGjO7opxWGVvgEcpta47ABAw8RHzSlRrDzKtPAcrYZpB3o/pAu184Pn34jCNUJWBHclemKxpwmunG1i6x4"
    "VXxdex3jauv3gQOLrIqzTooN3xZ1O5HZZiS8aDsWnWo0I0OxJjEH/CCTf21An3UuBm4m0mSey100SpCiqLdY41IgCp"
    "W2kbqnvvmJxFC5rxZRXY9PqYlb0+aRYVroGIWmoilojApll5tPY7D8KkBUaCdFPg3pOKf/U/wiQqu60wTtChrKR5u3"
    "G3hhu+wBIOP9cwrflpQNWPju0HEEodm27X7or3EwldxsBDnJ4dbaZJDyq8E4KSRmqRU8R1UCVe4CHwCrOIRPd5rF5v"
    "Z7mnUKtwZawWq53K83Y4tIreeUGPIGYy0s6mf2afSwU14iSNWnHYJr1ClXdUqutD+XVRFuTZwnrcUXjqpAfUeqEPi7"
    "drWI7jvhdQfN2LQSUAILzQHeWjGkngTOVe588J7pv1tdt3qQKPWJAY9asOKhWMRRoWTi+82fPw1VkYg993qU5Z62fa"
    "EoWbekkSWTk20NpWc6O2UaMcnIROiLY/2W7pyrbfQhC1Rv8slEAEgz1A36rKgPd56MetJ3mkMGHQvjW1RE8zvlR2hj"
    "vyTLcONvcfZOgIngdWzo13D1snf5F/sXf08PDJ3v7uwU52RPH7vFAEC4idsPrUskg0C/FH5I92jyeJT6uTlwtiP0Md"
    "uZp46E25Yftw8oKRej8R51M0nAeVE+Bqkvbx7vYkcWWMS5RljvAFmaaQ7ZVQxBwU+qZ1p1brU8NGQoJojY1DTDHBwH"
    "M9ew0ceb1LGwkb52uFOt+4Q+dHZW11XEJqebp3P0CdrSi8VPDvrsYsRBkbLYsQNHANKC+L+s/HlsnAVgZ1CskBEucR"
    "UPJigCUoe1akAIhMAcqTOT8WTgoONhBHowXscew2tBGEj4GMdrd1RUGmbf1CjjbEYWR3bd1GPQgDYV2CtwVK6pWmhI"
    "0HvPzDW62HO3+cE2FHIKYqyND2Twlb40JGC57WhwPXppM+SBJg35VlSEwl9xSyycpjT9h+0numE0+WVzCNYOpBvhy0"
    "LDx8fHJCGQZofAzqmciHn+WCXRlQFQR/R/j2+RjiQdIFJBOmybjlJXSdz7v12qhlzCXs+tQsfqGs6BXkTJzoOHROta"
    "Qkl0qjiGh8ryOcc0eByAgEPUYPek0BgWKIZyBrHich9VPSFyLS8TcqExeFWnIIvEAI5G2SW131Q/ScKfszJ96zfR/7"
    "2pPwIOzKh8FuHEPa0cWm9VqkQMU5BZx3jgVXDEkmx47stueDKVT82y7J9WD35MnmziHkaEStMYr2ubV5cEDFMgJcBH"
    "iui9BeA+Q4DTblpxLRUr2GKD0LnaMwTHLgTwcSCBCetTIyu9KxfR0QGeCOQ+dQNfbWzgiFAP84JwE7djxlH92RfRpQ"
    "Kg0wqgmUgsF1Xcq1oZ4rciV5CpSYRAzdOHLGLvInJJjuXlQbqNNnMcUIBI2/Hjy8dsZzBzQeyFzKCpBthJT55sX15C"
    "kKJV1Mm8WeKmt6sAWx0ySkdHI8re3S6sZ4fiASRBsjINezYwGawChDejIiTKgPTPEkCS13kA4fRqNhXEr+YGEe9kEp"
    "iEJkDbk9Aygfnsnc1m5f2tuQlAVO5/xj6FO0DJSGM+fS74ZZi664y4piwQtr+kn3Fdop8Q3oE51yLEoaRT6kMIBPPu"
    "3WI6/H05ZGVjkG3O+gT3ayKxrKPc6lk/iF1BeIZM2LBh/AjyedMMbmPpcM65SKNZXtnh3kAv0hcXroSepU3xQAR2BS"
    "D6uAChUcjEbRZgzF9fLegxDCjTI42CX7fbTNipQ/kTEn+DnK6h8B+izbqA6nIHIsuk5WYpF6BlVVHXNDQseqJtqdDl"
    "YCGvuhj2/mnmNdqnfA14LuMVQaN4VQ6arZo369C1k5VcnjeSFKTiAAFVdvGNk9U9H1pqndY5SCSBAQzJ8ugsoCGUi8"
    "E5SCOg3/VAbFHu//IBnceCa8bi9R9TDXIr5ZuiJPu0MPwRkNIy5ojvybaBtu+fYjlSBLIUoVWFagYIZQ684/yRtitC"
    "9HNRu6El3YTSSA+dVsXLras6GNQivpUCns7OuZK4oLUZIX+Teygx7FZ/TQ3SjKCmJRnKkBGUElID8eSuEzVorQF7Gd"
    "vHmYvPsFfqzId0yAqjsAVRJyNsWjKFDLNapQBaf5gYrOTd+zpcaOHg5h6qo7rFvj6C1OsAkDhFQAcoOfiCaheoFSMN"
    "SxbepxsgZEDWGIWH2N/qHZpLBj0AW9Hq5RTsLXYTTWSZZL3TCROS008thZwHW1rDvQmO+enWjJnOwTxYlKg7jlfHVI"
    "WohV+swLg+oNENnrugn58FTm8InAAbKHHz8m6j6OQwA1u5d6oFwPVVPNTuYqxxEyA5qSSQyZMcmy1vD4VJxRxE+Nlb"
    "OeCD4NJNhadjxkFcFSCIlH+7H4FkPP8WcDACs7lJgVOMnn4pGMH4cBIU1cPCFOx1Az+x50OQCHymWkSD7W3rQp9/5s"
    "58FIm6HMNag+Fh7UDroeFvOx1uUoPsdmzbpEK9/Kbr+2i8ytZ41ivdB/Te7KBq96d5JYKpiTxNfxtdkBqLcHipIYzs"
    "WPeXr8qb4xuVT+ZCSCMXCGBHIk4AKHYEYO4nu6p7QDKLPu1jkBzvH3s+cXF/zpd/ic/g5ZrdD3x1JaXx59I64x8+X1"
    "eWOxvORa7/FZzqTJ6uYVzk7N0n5QZXaVtW8ZjS8X+RI3Ln87pt3/cY1/h5ehlzWXvmI3eIWXnL45jyRYtGQs/aR80+"
    "DXeRlwickb8F4ufVm6yYBgGbpW87p5jc+qrzLmDC/X73n8Cp+hLy9mxSxxg1/lpV4EBGd5aX1o4nM5Gjjm3NEMZ84i"
    "45/wCn4XMbdfsI/47/JZNdU23wGGr0186CBGo7S6xCvoxSYff7CoAt/1Pr/HK/hRwvzw5+z7/JoFmrAXX75fnaFPCf"
    "zdZdNksoq80PdyC7XDF4ElOC0bpn69+JMy/3vGyyLqmT9mv2J/w/hfs+kaFKjBHr9SmK+bprnI5/QURGulaixXcGre"
    "4ONWaWudv/eaYbh5tTgEr1ZwI3+Xl4OONK803wKDxAOztA4m4u+DVqRn3vgFMzlzF5kFjA1Ndr5c5ixAnXl9MO5/g3"
    "FnaNhsvp1vGvkGvMaxsLm+tcpn1QDZnKHJ8ZJhzekJ8bJRM5rM/ogdAVXnM6PNPPNfZrQh3s4PP6sl2auWVh1rTk85"
    "l0vrZ43f5hXsvxeNpZcfWuWT7dbynB5QNjmfoWGhyQbNBT5Ds0HTaH6X8/FUEFR/g7/DSwNw7wIka97i89l0DzZVTb"
    "TTlcLgroomOPSaVT6np3Sw8Ur1Le3r7HTJaC5pKse727DIrXlepvg43fpLcGj0OvCOCo7KIBhmFV1zjs/QsIzf4FeL"
    "0zITTmMgZgexPgBn1y8NyXBjDdwlIwl7cU4GPlpGMiy+b1FwLrJqhQZOTC5XsF9sGM35bDB1/z0KxkUD9uAoyWjMqu"
    "nRUZ1/1/wDPp/NeMw5SBYvP6waVdazKjjOWYYo/MzEDMJu8lusVn70Pl+sXuV8niE5NBmsGkvGTeMWeEAbghs1Y5sV"
    "qzRvPH132mgjLvjXswZE2MJo2mCWNw8OFo2bv5yrsQ3j/pzuZx69zfm4xf+Ssb9lxktmfMUgfbSeQPogWy2yr9gCN6"
    "rEg3zFbkydk/wTW+Tltn9qLoyGYd9AaJAt3sqNB83bvIITA5MNlyGenxqx8SUz1MWvmPFT9g6fs2bmv97La6A6QygA"
    "HmYaZAiIxQp26mYZGvWtkrTvG0fGZ+yHRs+IIW28xVlKeaMka0SF3Szd+rdrtV/Ogc+9M6VxhIyyBWm2W2XDm8b9q8"
    "UG8QiSVbERfHSVL4zaPUjZ7VnVtz5dGLVyzxb4nG7XXjDW+xFj8u/YXzG+xVf598C7Kwg2dMEwq7wYX+YMtTnVUlA3"
    "r88z8GmQ6Jk5qwCmiRRG+dRkQZWIQZK8fgm9N1i/+rbJ511zFhwLuP2KzVC5f8V2eQVRiDmn88h0c/wW3VTB4cXIHr"
    "+3YfyMzaoPQl/jpipWrhmC0lU2sBZGuPkWLF6F3KA5x0z+DTjKfIaETRLhZ6wUOf/KjJ+zP+JzGr+acxqxViFTETw1"
    "WaMKwU9o9N+Z8QtGGiaw+Stm/Bcz/ocpN3lRKuaAF6WJ7AEw8UelO6BX0lv1ShHczWc1HYr4DCGz5qxCYVts+A8l41"
    "UJiBCa+rpk/LQEQdH9prRAqaNacurfwDJLrFKSbBgfQaxpjNIyHm3y34FkqP56CLKPyuLgAUtsqbS0zC2ur4FSuzj5"
    "Jz5mBf+w54cM/HtWgZhnxgvUAC/XVhuQNeZVpDSpWv4v49lC6w=="
)


@pytest.mark.parametrize("body", [CREATE_JOB, CREATE_CRONJOB, CREATE_JOB_FROM_CRONJOB])
def test_a_kubectl_body_decodes_to_the_json_go_wrote_for_it(body: str) -> None:
    obj, go_json = kubectl_body(body)
    assert obj == go_json


def test_kubectl_create_job() -> None:
    obj, _ = kubectl_body(CREATE_JOB)
    assert obj == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "hello"},
        "spec": {
            "template": {
                "metadata": {},
                "spec": {
                    "containers": [
                        {
                            "name": "hello",
                            "image": "busybox",
                            "command": ["echo", "hi"],
                            "resources": {},
                        }
                    ],
                    "restartPolicy": "Never",
                },
            }
        },
        "status": {},
    }


def test_kubectl_create_job_from_a_cronjob_keeps_zero_pointers_and_quantities() -> None:
    obj, _ = kubectl_body(CREATE_JOB_FROM_CRONJOB)
    spec = obj["spec"]
    assert (spec["backoffLimit"], spec["suspend"], spec["parallelism"]) == (0, False, 0)
    assert spec["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"] == [1, 2, 42]
    pod = spec["template"]["spec"]
    assert pod["overhead"] == {"cpu": "250m", "memory": "120Mi"}
    assert pod["tolerations"][0]["tolerationSeconds"] == 0
    main = pod["containers"][0]
    assert main["resources"]["requests"] == {
        "cpu": "250m",
        "ephemeral-storage": "0",
        "memory": "64Mi",
    }
    assert main["readinessProbe"] == {"tcpSocket": {"port": "http"}}
    assert main["env"][4] == {
        "name": "FROM_CM",
        "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": False}},
    }
    assert obj["metadata"]["ownerReferences"][0]["kind"] == "CronJob"


# hand-built bodies: a Job with a full pod template


def secret_key_ref(name: str, key: str, *, optional: bool) -> bytes:
    """A SecretKeySelector: its LocalObjectReference (field 1) is inline in JSON."""
    return ld(1, ld(1, name)) + ld(2, key) + num(3, int(optional))


MAIN_CONTAINER = (
    ld(1, "main")
    + ld(2, "busybox:1.36")
    + ld(3, "sh")
    + ld(3, "-c")
    + ld(4, "echo $(GREETING)")
    + ld(5, "")  # Go writes every string; an empty omitempty one stays out of the JSON
    + ld(6, ld(1, "http") + num(2, 0) + num(3, 8080) + ld(4, "TCP"))
    + ld(19, ld(1, "CFG_") + ld(2, ld(1, ld(1, "settings"))))
    + ld(7, ld(1, "GREETING") + ld(2, "hi"))
    + ld(7, ld(1, "EMPTY") + ld(2, ""))
    + ld(7, ld(1, "POD_NAME") + ld(3, ld(1, ld(1, "v1") + ld(2, "metadata.name"))))
    + ld(7, ld(1, "MEMORY") + ld(3, ld(2, ld(2, "limits.memory") + ld(3, quantity("1Mi")))))
    + ld(7, ld(1, "MODE") + ld(3, ld(3, ld(1, ld(1, "settings")) + ld(2, "mode"))))
    + ld(7, ld(1, "PASSWORD") + ld(3, ld(4, secret_key_ref("creds", "password", optional=False))))
    + ld(
        8,
        entry(1, "cpu", quantity("500m"))
        + entry(1, "memory", quantity("128Mi"))
        + entry(2, "cpu", quantity("250m"))
        + entry(2, "memory", quantity("64Mi")),
    )
    + ld(9, ld(1, "config") + num(2, 1) + ld(3, "/etc/config"))
    + ld(9, ld(1, "scratch") + num(2, 0) + ld(3, "/scratch") + ld(6, "$(POD_NAME)"))
    + ld(10, ld(1, ld(2, ld(1, "/healthz") + ld(2, port(8080)))) + num(2, 0) + num(4, 10))
    + ld(11, ld(1, ld(3, ld(1, port("http")))))
    + ld(15, num(2, 0) + num(4, 1000) + num(5, 1) + num(7, 0) + ld(1, ld(2, "ALL")))
    + ld(13, "/dev/termination-log")
    + ld(14, "IfNotPresent")
    + num(16, 0)
    + num(17, 0)
    + num(18, 0)
)
MAIN_CONTAINER_JSON = {
    "name": "main",
    "image": "busybox:1.36",
    "command": ["sh", "-c"],
    "args": ["echo $(GREETING)"],
    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
    "envFrom": [{"prefix": "CFG_", "configMapRef": {"name": "settings"}}],
    "env": [
        {"name": "GREETING", "value": "hi"},
        {"name": "EMPTY"},
        {
            "name": "POD_NAME",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
        },
        {
            "name": "MEMORY",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}},
        },
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
        {
            "name": "PASSWORD",
            "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password", "optional": False}},
        },
    ],
    "resources": {
        "limits": {"cpu": "500m", "memory": "128Mi"},
        "requests": {"cpu": "250m", "memory": "64Mi"},
    },
    "volumeMounts": [
        {"name": "config", "readOnly": True, "mountPath": "/etc/config"},
        {"name": "scratch", "mountPath": "/scratch", "subPathExpr": "$(POD_NAME)"},
    ],
    "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
    "readinessProbe": {"tcpSocket": {"port": "http"}},
    "securityContext": {
        "capabilities": {"drop": ["ALL"]},
        "privileged": False,
        "runAsUser": 1000,
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
    },
    "terminationMessagePath": "/dev/termination-log",
    "imagePullPolicy": "IfNotPresent",
}

POD_SPEC = (
    ld(
        1,
        ld(1, "config")
        + ld(
            2, ld(19, ld(1, ld(1, "settings")) + ld(2, ld(1, "a") + ld(2, "a.txt")) + num(3, 420))
        ),
    )
    + ld(1, ld(1, "scratch") + ld(2, ld(2, ld(1, "Memory") + ld(2, quantity("1Gi")))))
    + ld(1, ld(1, "cache") + ld(2, ld(2, b"")))
    + ld(1, ld(1, "creds") + ld(2, ld(6, ld(1, "creds") + num(3, 256) + num(4, 1))))
    + ld(1, ld(1, "data") + ld(2, ld(10, ld(1, "claim") + num(2, 0))))
    + ld(2, MAIN_CONTAINER)
    + ld(3, "Never")
    + num(4, 0)
    + ld(6, "ClusterFirst")
    + entry(7, "disk", "ssd")
    + ld(8, "runner")
    + num(21, 0)
    + num(11, 0)
    + ld(14, num(2, 1) + num(2, 0) + num(3, 1) + num(4, 1000) + num(4, 2000) + num(5, 0))
    + ld(18, ld(1, ld(1, ld(1, ld(1, ld(1, "zone") + ld(2, "In") + ld(3, "a") + ld(3, "b"))))))
    + ld(22, ld(1, "dedicated") + ld(2, "Equal") + ld(3, "batch") + ld(4, "NoSchedule"))
    + ld(22, ld(2, "Exists") + ld(4, "NoExecute") + num(5, 0))
    + num(30, 0)
)
POD_SPEC_JSON = {
    "volumes": [
        {
            "name": "config",
            "configMap": {
                "name": "settings",
                "items": [{"key": "a", "path": "a.txt"}],
                "defaultMode": 420,
            },
        },
        {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        {"name": "cache", "emptyDir": {}},
        {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 256, "optional": True}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}},
    ],
    "containers": [MAIN_CONTAINER_JSON],
    "restartPolicy": "Never",
    "terminationGracePeriodSeconds": 0,
    "dnsPolicy": "ClusterFirst",
    "nodeSelector": {"disk": "ssd"},
    "serviceAccountName": "runner",
    "automountServiceAccountToken": False,
    # the last runAsUser wins; a pointer's zero stays
    "securityContext": {
        "runAsUser": 0,
        "runAsNonRoot": True,
        "supplementalGroups": [1000, 2000],
        "fsGroup": 0,
    },
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
                ]
            }
        }
    },
    "tolerations": [
        {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"},
        {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
    ],
    "enableServiceLinks": False,
}


def test_a_job_with_a_full_pod_template() -> None:
    spec = (
        num(1, 2)
        + num(2, 4)
        + num(7, 0)
        + num(10, 0)
        + num(8, 100)
        + ld(9, "NonIndexed")
        + ld(4, entry(1, "app", "hello"))
        + ld(6, ld(1, entry(11, "app", "hello")) + ld(2, POD_SPEC))
    )
    metadata = ld(1, "hello") + ld(3, "default") + entry(11, "app", "hello")
    body = envelope("batch/v1", "Job", ld(1, metadata) + ld(2, spec) + ld(3, b""))
    assert decode_request(body) == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "hello", "namespace": "default", "labels": {"app": "hello"}},
        "spec": {
            "parallelism": 2,
            "completions": 4,
            "backoffLimit": 0,
            "suspend": False,
            "ttlSecondsAfterFinished": 100,
            "completionMode": "NonIndexed",
            "selector": {"matchLabels": {"app": "hello"}},
            "template": {"metadata": {"labels": {"app": "hello"}}, "spec": POD_SPEC_JSON},
        },
        "status": {},
    }


def test_a_job_status() -> None:
    condition = (
        ld(1, "Complete") + ld(2, "True") + ld(4, num(1, 1_700_000_000)) + ld(5, "") + ld(6, "")
    )
    status = (
        ld(1, condition)
        + ld(2, num(1, 1_699_999_000))
        + ld(3, num(1, 1_700_000_000))
        + num(4, 0)
        + num(5, 4)
        + num(6, 0)
        + ld(7, "0-3")
        + ld(8, ld(1, "uid-1"))
        + num(9, 0)
    )
    body = envelope("batch/v1", "Job", ld(1, ld(1, "hello")) + ld(3, status))
    assert decode_request(body)["status"] == {
        "conditions": [
            {"type": "Complete", "status": "True", "lastTransitionTime": "2023-11-14T22:13:20Z"}
        ],
        "startTime": "2023-11-14T21:56:40Z",
        "completionTime": "2023-11-14T22:13:20Z",
        "succeeded": 4,
        "completedIndexes": "0-3",
        "uncountedTerminatedPods": {"succeeded": ["uid-1"]},
        "ready": 0,
    }


def test_a_failure_policy_and_a_success_policy() -> None:
    # Exit codes arrive packed from some encoders and one by one from Go's; both count,
    # and a negative int32 is a ten-byte varint.
    packed = ld(3, varint(1) + varint(2) + varint(-1))
    exit_codes = ld(1, "main") + ld(2, "In") + packed + num(3, 42)
    rules = ld(1, ld(1, "FailJob") + ld(2, exit_codes))
    rules += ld(1, ld(1, "Ignore") + ld(3, ld(1, "DisruptionTarget") + ld(2, "True")))
    spec = ld(11, rules) + ld(16, ld(1, ld(1, "0-2") + num(2, 0)))
    body = envelope("batch/v1", "Job", ld(1, ld(1, "j")) + ld(2, spec))
    assert decode_request(body)["spec"] == {
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {
                        "containerName": "main",
                        "operator": "In",
                        "values": [1, 2, -1, 42],
                    },
                },
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                },
            ]
        },
        "successPolicy": {"rules": [{"succeededIndexes": "0-2", "succeededCount": 0}]},
    }


def test_a_cronjob() -> None:
    job_spec = num(7, 3) + ld(
        6, ld(1, b"") + ld(2, ld(2, ld(1, "tick") + ld(2, "busybox")) + ld(3, "OnFailure"))
    )
    spec = (
        ld(1, "0 * * * *")
        + ld(8, "Europe/Paris")
        + num(2, 0)
        + ld(3, "Forbid")
        + num(4, 0)
        + ld(5, ld(1, entry(11, "team", "a")) + ld(2, job_spec))
        + num(6, 0)
        + num(7, 1)
    )
    active = (
        ld(1, "Job") + ld(2, "default") + ld(3, "tick-28333") + ld(4, "uid-1") + ld(5, "batch/v1")
    )
    status = ld(1, active) + ld(4, num(1, 1_700_000_000)) + ld(5, b"")
    body = envelope("batch/v1", "CronJob", ld(1, ld(1, "tick")) + ld(2, spec) + ld(3, status))
    assert decode_request(body) == {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick"},
        "spec": {
            "schedule": "0 * * * *",
            "timeZone": "Europe/Paris",
            "startingDeadlineSeconds": 0,
            "concurrencyPolicy": "Forbid",
            "suspend": False,
            "jobTemplate": {
                "metadata": {"labels": {"team": "a"}},
                "spec": {
                    "backoffLimit": 3,
                    "template": {
                        "metadata": {},
                        "spec": {
                            "containers": [{"name": "tick", "image": "busybox"}],
                            "restartPolicy": "OnFailure",
                        },
                    },
                },
            },
            "successfulJobsHistoryLimit": 0,
            "failedJobsHistoryLimit": 1,
        },
        "status": {
            "active": [
                {
                    "kind": "Job",
                    "namespace": "default",
                    "name": "tick-28333",
                    "uid": "uid-1",
                    "apiVersion": "batch/v1",
                }
            ],
            "lastScheduleTime": "2023-11-14T22:13:20Z",
        },
    }


# hand-built bodies: Pod and PodTemplate


def test_a_pod_with_sidecar_ephemeral_container_and_status() -> None:
    sidecar = ld(1, "proxy") + ld(2, "envoy") + ld(24, "Always")
    sidecar += ld(22, ld(1, ld(1, ld(1, "true"))) + num(6, 30) + num(7, 0))
    debugger = ld(1, ld(1, "debugger") + ld(2, "busybox") + num(16, 1)) + ld(2, "main")
    spec = (
        ld(20, sidecar)
        + ld(2, ld(1, "main") + ld(2, "app") + ld(12, ld(2, ld(3, ld(1, port(9000))))))
        + ld(34, debugger)
        + ld(23, ld(1, "10.0.0.1") + ld(2, "db") + ld(2, "db.local"))
        + num(25, 0)
        + entry(32, "cpu", quantity("250m"))
        + ld(33, num(1, 1) + ld(2, "zone") + ld(3, "DoNotSchedule") + ld(4, entry(1, "app", "x")))
        + ld(36, ld(1, "linux"))
        + ld(38, ld(1, "wait-for-quota"))
    )
    running = ld(2, ld(1, num(1, 1_700_000_000)))
    container_status = ld(1, "main") + ld(2, running) + ld(3, b"") + num(4, 1) + num(5, 0)
    container_status += ld(6, "app") + ld(7, "") + ld(8, "containerd://abc") + num(9, 1)
    status = (
        ld(1, "Running")
        + ld(2, ld(1, "Ready") + ld(2, "True") + ld(3, b"") + ld(4, num(1, 1_700_000_000)))
        + ld(5, "10.1.0.1")
        + ld(12, ld(1, "10.2.0.7"))
        + ld(7, num(1, 1_699_999_990))
        + ld(8, container_status)
        + ld(9, "Burstable")
    )
    body = envelope("v1", "Pod", ld(1, ld(1, "p") + ld(3, "default")) + ld(2, spec) + ld(3, status))
    assert decode_request(body) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "initContainers": [
                {
                    "name": "proxy",
                    "image": "envoy",
                    "restartPolicy": "Always",
                    "startupProbe": {
                        "exec": {"command": ["true"]},
                        "failureThreshold": 30,
                        "terminationGracePeriodSeconds": 0,
                    },
                }
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "app",
                    "lifecycle": {"preStop": {"tcpSocket": {"port": 9000}}},
                }
            ],
            "ephemeralContainers": [
                {
                    "name": "debugger",
                    "image": "busybox",
                    "stdin": True,
                    "targetContainerName": "main",
                }
            ],
            "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["db", "db.local"]}],
            "priority": 0,
            "overhead": {"cpu": "250m"},
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "x"}},
                }
            ],
            "os": {"name": "linux"},
            "schedulingGates": [{"name": "wait-for-quota"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2023-11-14T22:13:20Z"}
            ],
            "hostIP": "10.1.0.1",
            "podIPs": [{"ip": "10.2.0.7"}],
            "startTime": "2023-11-14T22:13:10Z",
            "containerStatuses": [
                {
                    "name": "main",
                    "state": {"running": {"startedAt": "2023-11-14T22:13:20Z"}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": "app",
                    "imageID": "",
                    "containerID": "containerd://abc",
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        },
    }


def test_a_pod_template() -> None:
    template = ld(1, entry(11, "app", "t")) + ld(2, ld(2, ld(1, "c") + ld(2, "i")))
    body = envelope("v1", "PodTemplate", ld(1, ld(1, "t")) + ld(2, template))
    assert decode_request(body) == {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t"},
        "template": {
            "metadata": {"labels": {"app": "t"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    }


# edges


def test_a_quantity_without_its_string_is_zero_and_unknown_fields_are_skipped() -> None:
    # A JobSpec field of a later release (number 17) is skipped, as kube-apiserver 1.32 does.
    container = ld(1, "c") + ld(8, entry(1, "cpu", b"") + ld(1, ld(1, "memory")))
    pod_spec = ld(2, container) + ld(1, ld(1, "v") + ld(2, ld(2, ld(2, b""))))
    spec = ld(6, ld(2, pod_spec)) + ld(17, ld(1, "future"))
    body = envelope("batch/v1", "Job", ld(2, spec))
    assert decode_request(body)["spec"] == {
        "template": {
            "spec": {
                "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "0"}}],
                "containers": [{"name": "c", "resources": {"limits": {"cpu": "0", "memory": "0"}}}],
            }
        }
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (envelope("batch/v1", "Job", ld(2, ld(7, "three"))), "Job.spec.backoffLimit: wire type 2"),
        (
            envelope("batch/v1", "Job", ld(2, ld(6, ld(2, num(2, 1))))),
            "Job.spec.template.spec.containers: wire type 0",
        ),
        (
            envelope("v1", "Pod", ld(2, ld(2, ld(8, entry(1, "cpu", ld(1, b"\xff")))))),
            "not valid UTF-8",
        ),
        (
            envelope("v1", "Pod", ld(2, ld(2, ld(11, ld(1, ld(3, ld(1, num(1, 2)))))))),
            "tcpSocket.port: malformed IntOrString",
        ),
    ],
)
def test_malformed_bodies_are_refused_with_the_path(body: bytes, message: str) -> None:
    with pytest.raises(ProtobufError, match=message):
        decode_request(body)


def test_the_kinds_decoded_and_still_refused() -> None:
    for key in [("batch/v1", "Job"), ("batch/v1", "CronJob"), ("v1", "Pod"), ("v1", "PodTemplate")]:
        assert key in protobuf.KINDS
    assert protobuf.KINDS[("batch/v1", "Job")] is protobuf_tables_batch.JOB
    assert protobuf.KINDS[("v1", "Pod")] is protobuf_tables_core.POD
    body = envelope("batch/v1", "DeleteOptions", num(1, 0) + ld(4, "Background"))
    assert decode_request(body) == {
        "apiVersion": "batch/v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Background",
    }
    with pytest.raises(UnsupportedKindError, match="kind Job \\(batch/v1beta1\\)"):
        decode_request(envelope("batch/v1beta1", "Job", b""))
    with pytest.raises(UnsupportedKindError, match="kind StatefulSet"):
        decode_request(envelope("apps/v1", "StatefulSet", b""))


def test_the_generated_modules_say_where_they_come_from() -> None:
    for module in (protobuf_tables_core, protobuf_tables_batch):
        assert module.__doc__ is not None
        assert "GENERATED by tools/protobuf_tables_from_proto.py" in module.__doc__
        assert "commit 3cb6d6c4c6bc2adb85da16a5675bb4240878c881" in module.__doc__


# random Jobs round-trip: encoded by the tables, decoded to the same JSON

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
SCALARS = ("int", "bool")
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)
MOMENTS = st.datetimes(
    min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


def timestamp(text: str, micro: bool) -> bytes:
    """A meta/v1 Time or MicroTime message of the RFC 3339 text the decoder writes."""
    moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ" if micro else "%Y-%m-%dT%H:%M:%SZ")
    since = moment.replace(tzinfo=UTC) - EPOCH
    return num(1, since.days * 86_400 + since.seconds) + num(2, since.microseconds * 1000)


def scalar_values(kind: str) -> st.SearchStrategy[Any]:
    """Every value a field of this kind may decode to, zero ones included."""
    strategies: Mapping[str, st.SearchStrategy[Any]] = {
        "string": st.text(max_size=8),
        "int": st.integers(-(2**63), 2**63 - 1),
        "bool": st.booleans(),
        "quantity": st.text(max_size=6),
        "int_or_string": st.integers(-(2**31), 2**31 - 1) | st.text(max_size=6),
        "time": MOMENTS.map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ")),
        "micro_time": MOMENTS.map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
        "raw_json": JSON_VALUES,
        "string_map": st.dictionaries(
            st.text(max_size=6), st.text(max_size=6), min_size=1, max_size=2
        ),
        "quantity_map": st.dictionaries(
            st.text(max_size=6), st.text(max_size=6), min_size=1, max_size=2
        ),
    }
    return strategies[kind]


def values(field: Field, depth: int) -> st.SearchStrategy[Any]:
    """What a field decodes to: zero scalars only where Go's JSON keeps them."""
    if field.kind == "message":
        assert field.table is not None
        one = messages(field.table, depth + 1)
    else:
        one = scalar_values(field.kind)
    if field.repeated:
        return st.lists(one, min_size=1, max_size=2)
    if field.keep_zero or field.kind == "message":
        return one
    return one.filter(bool)


@st.composite
def messages(draw: st.DrawFn, table: Table, depth: int) -> dict[str, Any]:
    """A few fields of a message (fewer the deeper it lies), inline structs' fields among them."""
    budget = 3 if depth < 4 else 1 if depth < 8 else 0
    numbers = draw(st.lists(st.sampled_from(sorted(table)), max_size=budget, unique=True))
    out: dict[str, Any] = {}
    for number in numbers:
        field = table[number]
        if field.inline:
            assert field.table is not None
            out.update(draw(messages(field.table, depth + 1)))
        else:
            out[field.name] = draw(values(field, depth))
    return out


@st.composite
def jobs(draw: st.DrawFn) -> dict[str, Any]:
    """A random Job, always with a pod template and containers somewhere in it."""
    job = draw(messages(protobuf_tables_batch.JOB, 0))
    pod_spec = draw(messages(protobuf_tables_core.POD_SPEC, 3))
    container = messages(protobuf_tables_core.CONTAINER, 4)
    pod_spec["containers"] = draw(st.lists(container, min_size=1, max_size=2))
    job.setdefault("spec", {}).setdefault("template", {})["spec"] = pod_spec
    return job


def json_names(table: Table) -> set[str]:
    """The keys a message writes, its inline structs' included."""
    names: set[str] = set()
    for field in table.values():
        if field.inline:
            assert field.table is not None
            names |= json_names(field.table)
        else:
            names.add(field.name)
    return names


def encode(obj: Mapping[str, Any], table: Table, *, packed: bool) -> bytes:
    """The message a decoded object came from, fields in the table's order."""
    out = b""
    for number, field in table.items():
        if field.inline:
            assert field.table is not None
            part = {key: value for key, value in obj.items() if key in json_names(field.table)}
            out += ld(number, encode(part, field.table, packed=packed)) if part else b""
        elif field.name in obj:
            out += encode_field(number, field, obj[field.name], packed=packed)
    return out


def encode_field(number: int, field: Field, value: Any, *, packed: bool) -> bytes:
    if field.kind in ("string_map", "quantity_map"):
        wrap: Callable[[str], bytes | str] = quantity if field.kind == "quantity_map" else str
        return b"".join(entry(number, key, wrap(item)) for key, item in value.items())
    if not field.repeated:
        return encode_one(number, field, value, packed=packed)
    if packed and field.kind in SCALARS:
        return ld(number, b"".join(varint(int(item)) for item in value))
    return b"".join(encode_one(number, field, item, packed=packed) for item in value)


def encode_one(number: int, field: Field, value: Any, *, packed: bool) -> bytes:
    if field.kind in SCALARS:
        return num(number, int(value))
    if field.kind == "message":
        assert field.table is not None
        return ld(number, encode(value, field.table, packed=packed))
    if field.kind in ("time", "micro_time"):
        return ld(number, timestamp(value, micro=field.kind == "micro_time"))
    encoders: Mapping[str, Callable[[Any], bytes | str]] = {
        "string": str,
        "quantity": quantity,
        "int_or_string": port,
        "raw_json": lambda document: ld(1, json.dumps(document)),
    }
    return ld(number, encoders[field.kind](value))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job=jobs(), packed=st.booleans())
def test_random_jobs_round_trip(job: dict[str, Any], packed: bool) -> None:
    body = envelope("batch/v1", "Job", encode(job, protobuf_tables_batch.JOB, packed=packed))
    assert decode_request(body) == {"apiVersion": "batch/v1", "kind": "Job", **job}
