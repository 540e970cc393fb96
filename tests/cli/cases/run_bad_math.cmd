run resnet50 --compare ios --math fp8
