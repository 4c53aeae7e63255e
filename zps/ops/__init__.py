"""zps.ops"""
