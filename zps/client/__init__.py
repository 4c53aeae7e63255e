"""zps.client"""
